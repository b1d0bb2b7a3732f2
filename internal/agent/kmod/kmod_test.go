package kmod

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

const sampleDep = `kernel/drivers/virtio/virtio.ko:
kernel/drivers/virtio/virtio_ring.ko:
kernel/drivers/virtio/virtio_pci_legacy_dev.ko:
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_legacy_dev.ko kernel/drivers/virtio/virtio_pci_modern_dev.ko kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/block/virtio_blk.ko: kernel/drivers/virtio/virtio.ko kernel/drivers/virtio/virtio_ring.ko
kernel/drivers/usb/storage/usb-storage.ko.xz: kernel/drivers/usb/core/usbcore.ko
kernel/drivers/usb/core/usbcore.ko:
`

func TestOrderPutsDependenciesFirstOnce(t *testing.T) {
	d, err := ParseDeps(strings.NewReader(sampleDep))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Order([]string{"kernel/drivers/block/virtio_blk.ko", "kernel/drivers/virtio/virtio_pci.ko"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/drivers/virtio/virtio_ring.ko",
		"kernel/drivers/virtio/virtio.ko",
		"kernel/drivers/block/virtio_blk.ko",
		"kernel/drivers/virtio/virtio_pci_modern_dev.ko",
		"kernel/drivers/virtio/virtio_pci_legacy_dev.ko",
		"kernel/drivers/virtio/virtio_pci.ko",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order:\n got %v\nwant %v", got, want)
	}
	var buf bytes.Buffer
	if err := d.Write(&buf, got); err != nil {
		t.Fatal(err)
	}
	back, err := ParseDeps(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := back.Order(got); err != nil || !reflect.DeepEqual(again, want) {
		t.Fatalf("written subset reorders to %v, %v", again, err)
	}
}

func TestNamesFoldDashesAndSuffixes(t *testing.T) {
	d, err := ParseDeps(strings.NewReader(sampleDep))
	if err != nil {
		t.Fatal(err)
	}
	f, ok := d.File("usb_storage")
	if !ok || f != "kernel/drivers/usb/storage/usb-storage.ko.xz" {
		t.Fatalf("File(usb_storage) = %q, %v", f, ok)
	}
	if _, ok := d.File("usb-storage"); !ok {
		t.Fatal("File(usb-storage) not found")
	}
}

func TestOrderRejectsMissingDependency(t *testing.T) {
	d, err := ParseDeps(strings.NewReader("a.ko: b.ko\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Order([]string{"a.ko"}); err == nil || !strings.Contains(err.Error(), "a.ko needs b.ko") {
		t.Fatalf("err = %v, want a.ko needs b.ko", err)
	}
}

func TestFilesKeepTheFileOrder(t *testing.T) {
	d, err := ParseDeps(strings.NewReader("z.ko:\na.ko:\nm.ko: a.ko\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Order(d.Files())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"z.ko", "a.ko", "m.ko"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v (file order, not sorted)", got, want)
	}
}

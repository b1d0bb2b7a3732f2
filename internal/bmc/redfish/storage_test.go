package redfish

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc/sim"
)

// raidClient starts a one-system fleet and returns a client and its
// controller as read.
func raidClient(t *testing.T, opts sim.Options) (*sim.Fleet, *Client, bmc.StorageController) {
	t.Helper()
	opts.Systems = 1
	f := startFleet(t, opts)
	c := open(t, newOpener(t, Options{}), endpoint(f.URL(), ""))
	scs, err := c.Storage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 1 {
		t.Fatalf("storage %+v", scs)
	}
	return f, c, scs[0]
}

func driveIDs(sc bmc.StorageController, media string) []string {
	var out []string
	for _, d := range sc.Drives {
		if d.MediaType == media {
			out = append(out, d.ID)
		}
	}
	return out
}

// The standard controller: read with its RAID types and drives; a volume
// created and deleted at once (no task), each read back.
func TestRAIDStandard(t *testing.T) {
	f, c, sc := raidClient(t, sim.Options{})
	ctx := context.Background()
	if strings.Join(sc.RAIDTypes, ",") != "RAID0,RAID1,RAID5,RAID6,RAID10" || len(sc.Drives) != 4 {
		t.Fatalf("controller %+v", sc)
	}
	if d := sc.Drives[0]; d.MediaType != "SSD" || d.Protocol != "SATA" || d.CapacityBytes != 960197124096 || d.Name == "" {
		t.Fatalf("drive %+v", d)
	}
	ssds := driveIDs(sc, "SSD")
	task, err := c.CreateVolume(ctx, sc.ID, bmc.VolumeSpec{Name: "os", RAIDType: "RAID1", Drives: ssds})
	if err != nil || task.Monitor != "" {
		t.Fatalf("create: %+v %v", task, err)
	}
	scs, err := c.Storage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vols := scs[0].Volumes
	if len(vols) != 1 || vols[0].Name != "os" || vols[0].RAIDType != "RAID1" || vols[0].CapacityBytes != 960197124096 || !sameLinks(vols[0].Drives, ssds) {
		t.Fatalf("volumes %+v", vols)
	}
	task, err = c.DeleteVolume(ctx, vols[0].ID)
	if err != nil || task.Monitor != "" {
		t.Fatalf("delete: %+v %v", task, err)
	}
	if vs, _ := f.Volumes(f.SystemIDs()[0]); len(vs) != 0 {
		t.Fatalf("volumes after delete %+v", vs)
	}
	// Deleting what is gone is done.
	if _, err := c.DeleteVolume(ctx, vols[0].ID); err != nil {
		t.Fatal(err)
	}
}

// A create the BMC refuses is KindRefused naming the property.
func TestRAIDRefused(t *testing.T) {
	_, c, sc := raidClient(t, sim.Options{})
	ctx := context.Background()
	ssds := driveIDs(sc, "SSD")
	for _, tc := range []struct {
		spec bmc.VolumeSpec
		want string
	}{
		{bmc.VolumeSpec{RAIDType: "RAID5", Drives: ssds}, "(Links/Drives)"},
		{bmc.VolumeSpec{RAIDType: "RAID1", Drives: ssds, CapacityBytes: 2e12}, "(CapacityBytes)"},
		{bmc.VolumeSpec{RAIDType: "RAID50", Drives: ssds}, "(RAIDType)"},
		{bmc.VolumeSpec{RAIDType: "RAID1", Drives: []string{ssds[0], driveIDs(sc, "HDD")[0]}}, "does not mix drives"},
	} {
		_, err := c.CreateVolume(ctx, sc.ID, tc.spec)
		wantKind(t, err, bmc.KindRefused)
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v", tc.spec, err)
		}
	}
	_, err := c.CreateVolume(ctx, sc.ID+"x", bmc.VolumeSpec{RAIDType: "RAID1", Drives: ssds})
	wantKind(t, err, bmc.KindRefused)
}

// With task monitors the create and the delete are tasks the caller
// follows with TaskStatus; a failing task is Failed and creates nothing.
func TestRAIDTasks(t *testing.T) {
	for _, fails := range []bool{false, true} {
		t.Run(map[bool]string{false: "ok", true: "fails"}[fails], func(t *testing.T) {
			f, c, sc := raidClient(t, sim.Options{Tweak: func(q *sim.Quirks) {
				q.TaskMonitor, q.TaskDelay, q.TaskFails = true, 100*time.Millisecond, fails
			}})
			ctx := context.Background()
			task, err := c.CreateVolume(ctx, sc.ID, bmc.VolumeSpec{Name: "data", RAIDType: "RAID0", Drives: driveIDs(sc, "HDD")})
			if err != nil || task.Monitor == "" {
				t.Fatalf("create: %+v %v", task, err)
			}
			st := waitTask(t, c, task.Monitor)
			vs, _ := f.Volumes(f.SystemIDs()[0])
			if fails {
				if !st.Failed || st.Message == "" || len(vs) != 0 {
					t.Fatalf("failed task %+v, volumes %+v", st, vs)
				}
				return
			}
			if st.Failed || len(vs) != 1 || vs[0].CapacityBytes != 2*4000787030016 {
				t.Fatalf("task %+v, volumes %+v", st, vs)
			}
			task, err = c.DeleteVolume(ctx, vs[0].Path)
			if err != nil || task.Monitor == "" {
				t.Fatalf("delete: %+v %v", task, err)
			}
			if st := waitTask(t, c, task.Monitor); st.Failed {
				t.Fatalf("delete task %+v", st)
			}
			if vs, _ := f.Volumes(f.SystemIDs()[0]); len(vs) != 0 {
				t.Fatalf("volumes after delete %+v", vs)
			}
		})
	}
}

// A create the BMC acknowledges and does not carry out: at once, it is
// KindRefused from the read-back; through a task, the task completes and
// Storage shows no volume (the caller's read-back).
func TestRAIDCreateIgnored(t *testing.T) {
	_, c, sc := raidClient(t, sim.Options{Tweak: func(q *sim.Quirks) { q.Storage.CreateIgnored = true }})
	ctx := context.Background()
	_, err := c.CreateVolume(ctx, sc.ID, bmc.VolumeSpec{Name: "os", RAIDType: "RAID1", Drives: driveIDs(sc, "SSD")})
	wantKind(t, err, bmc.KindRefused)
	if !errors.Is(err, errNotApplied) || !strings.Contains(err.Error(), "shows no such volume") {
		t.Fatalf("ignored create: %v", err)
	}

	_, c, sc = raidClient(t, sim.Options{Tweak: func(q *sim.Quirks) {
		q.Storage.CreateIgnored, q.TaskMonitor, q.TaskDelay = true, true, 50*time.Millisecond
	}})
	task, err := c.CreateVolume(ctx, sc.ID, bmc.VolumeSpec{Name: "os", RAIDType: "RAID1", Drives: driveIDs(sc, "SSD")})
	if err != nil {
		t.Fatal(err)
	}
	if st := waitTask(t, c, task.Monitor); st.Failed {
		t.Fatalf("task %+v", st)
	}
	scs, err := c.Storage(ctx)
	if err != nil || len(scs[0].Volumes) != 0 {
		t.Fatalf("storage after an ignored create: %+v %v", scs, err)
	}
}

// iDRAC: ids of its own, every create and delete a job; the driver asks
// for Immediate, which the Volumes collection lists, so the job runs
// without a reset.
func TestRAIDIDRAC(t *testing.T) {
	f, c, sc := raidClient(t, sim.Options{Dialect: sim.DialectIDRAC9, Tweak: func(q *sim.Quirks) { q.TaskDelay = 50 * time.Millisecond }})
	ctx := context.Background()
	if !strings.HasSuffix(sc.ID, "/Storage/RAID.Integrated.1-1") {
		t.Fatalf("controller %s", sc.ID)
	}
	task, err := c.CreateVolume(ctx, sc.ID, bmc.VolumeSpec{Name: "os", RAIDType: "RAID1", Drives: driveIDs(sc, "SSD")})
	if err != nil || task.Monitor == "" {
		t.Fatalf("create: %+v %v", task, err)
	}
	if st := waitTask(t, c, task.Monitor); st.Failed {
		t.Fatalf("job %+v", st)
	}
	st, _ := f.Storage(f.SystemIDs()[0])
	if st.StagedJobs != 0 || len(st.Volumes) != 1 || !strings.HasPrefix(st.Volumes[0].ID, "Disk.Virtual.0:") || st.Volumes[0].Name != "os" {
		t.Fatalf("storage %+v", st)
	}
	scs, err := c.Storage(ctx)
	if err != nil || len(scs[0].Volumes) != 1 || scs[0].Volumes[0].RAIDType != "RAID1" {
		t.Fatalf("storage read %+v %v", scs, err)
	}
	task, err = c.DeleteVolume(ctx, scs[0].Volumes[0].ID)
	if err != nil || task.Monitor == "" {
		t.Fatalf("delete: %+v %v", task, err)
	}
	waitTask(t, c, task.Monitor)
	if vs, _ := f.Volumes(f.SystemIDs()[0]); len(vs) != 0 {
		t.Fatalf("volumes %+v", vs)
	}
}

// sushy-tools stores a volume without RAID type or drives: the read-back
// refuses it; it takes no DELETE: unsupported.
func TestRAIDSushy(t *testing.T) {
	f, c, sc := raidClient(t, sim.Options{Dialect: sim.DialectSushy})
	ctx := context.Background()
	if len(sc.RAIDTypes) != 0 || len(sc.Drives) != 1 {
		t.Fatalf("controller %+v", sc)
	}
	_, err := c.CreateVolume(ctx, sc.ID, bmc.VolumeSpec{Name: "v", RAIDType: "RAID0", Drives: []string{sc.Drives[0].ID}})
	wantKind(t, err, bmc.KindRefused)
	if !strings.Contains(err.Error(), "RAID type (none), not RAID0") {
		t.Fatalf("sushy create: %v", err)
	}
	vs, _ := f.Volumes(f.SystemIDs()[0])
	if len(vs) != 1 {
		t.Fatalf("volumes %+v", vs)
	}
	_, err = c.DeleteVolume(ctx, vs[0].Path)
	wantKind(t, err, bmc.KindUnsupported)
}

// A system without Storage: KindUnsupported naming the capability.
func TestRAIDUnsupported(t *testing.T) {
	f := startFleet(t, sim.Options{Systems: 1, Tweak: func(q *sim.Quirks) { q.Storage.None = true }})
	d := bmc.Drivers{"redfish": newOpener(t, Options{})}
	cl, err := d.Open(context.Background(), endpoint(f.URL(), ""))
	if err != nil {
		t.Fatal(err)
	}
	r, err := bmc.Capability[bmc.RAIDController](cl)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Storage(context.Background())
	wantKind(t, err, bmc.KindUnsupported)
	if !strings.Contains(err.Error(), "RAID (Storage volumes)") {
		t.Fatalf("no storage: %v", err)
	}
}

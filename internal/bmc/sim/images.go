package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"
)

// The fleet serves one demo disk image at DemoImagePath, so a demo (the
// quickstart, `make run`) can name an image URL that really answers: the
// controller checks an image URL before it hands it to a BMC, and a made-up
// one fails the instance. It supports HEAD and Range like any image server.
const DemoImagePath = "/sim/images/demo.img"

// demoImage is 1 MiB of deterministic bytes: a raw "disk" with an MBR boot
// signature, nothing bootable. Built once; every fleet serves the same.
var demoImage = func() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i*31 + i/4096)
	}
	b[510], b[511] = 0x55, 0xaa
	return b
}()

// demoImageTime is the image's fixed Last-Modified, so range requests and
// resumes validate against it.
var demoImageTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// DemoImageChecksum is the sha256 of the demo image, as image.checksum
// takes it.
func DemoImageChecksum() string {
	sum := sha256.Sum256(demoImage)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func serveDemoImage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "demo.img", demoImageTime, bytes.NewReader(demoImage))
}

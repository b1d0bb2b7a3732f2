package disk

import "io"

// Partition is one partition a disk's table lists, as the byte range
// [Start, End) of the disk.
type Partition struct{ Start, End int64 }

// Partitions lists the partitions of the disk r of size bytes: the used
// GPT entries, else the MBR's primaries (a protective entry aside); nil
// when the disk has no partition table. The simulated machines of
// internal/bmc/sim look through them for a config drive, as cloud-init
// does on a booted node.
func Partitions(r io.ReaderAt, size int64) []Partition {
	var out []Partition
	for _, e := range partitionExtents(r, size) {
		out = append(out, Partition{Start: e.start, End: e.end})
	}
	return out
}

// Package disk is the disk work of the deploy agent: the controller's own
// static binary running as /init of a small in-memory Linux on a node. It
// holds what the agent does to a node's disks, as plain functions the
// agent's job loop calls:
//
//   - Write streams an image from an HTTP(S) URL to the root disk: raw or
//     qcow2 (converted as it streams), either also gzip / zstd / xz / bzip2
//     compressed, detected from magic bytes; the checksum is verified
//     while streaming, a dropped connection is resumed with a Range
//     request, memory stays bounded.
//   - ChooseRootDisk picks the root disk from an inventory by Ironic-style
//     root device hints; ListDisks reads that inventory from /sys/block.
//   - EraseMetadata and EraseFull clean a disk (quick and full).
//   - AppendConfigDrive adds a "config-2" partition holding the config
//     drive ISO at the end of the root disk, after the image is written.
//
// Every error it returns says whose fault it is, because the controller
// treats the two differently (a bad input must not fault a healthy node): errors.Is(err,
// ErrInput) is the user's input (image unreachable, checksum, format, no
// disk fits the hints): the instance fails and the node stays healthy.
// errors.Is(err, ErrMachine) is the machine (write I/O error, disk gone):
// a node fault. Error messages never carry the secrets a URL may hold.
//
// The package touches nothing but the paths it is given, so tests run on
// regular files standing for disks and a fake sysfs tree.
package disk

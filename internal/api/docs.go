package api

import (
	"strconv"
	"strings"
)

// The texts that say what some of an instance's settings do, each written
// once, here: the provider's schema (and so docs/, which tfplugindocs
// generates from it), openapi.json and README.md quote them whole, and
// tests check every quote (provider: TestDocsAreUpToDate and
// TestReadmeQuotesTheAPITexts; httpapi: TestOpenAPIQuotesTheAPITexts).
// Change a text here, then regenerate docs/ (make docs) and put the new
// text where openapi.json and README.md quote it; the tests say where.

// RootDiskMinGiB is the size of the smallest disk an image deploy writes
// when the instance gives no root_device hints (as in Ironic: smaller
// ones are card readers, BMC virtual drives and the like).
// internal/agent/disk.DefaultMinSize is this many GiB.
const RootDiskMinGiB = 4

// MaxUserDataKiB bounds an instance's user_data (the controller's
// baremetal.MaxUserData, in KiB).
const MaxUserDataKiB = 64

// ImageFormats are the disk image formats an image deploy writes, and
// ImageCompressions the compressions of either it undoes, in the order
// they are shown; internal/agent/disk detects each from the image's first
// bytes (a test there holds it to these lists).
func ImageFormats() []string      { return []string{"raw", "qcow2"} }
func ImageCompressions() []string { return []string{"gzip", "zstd", "xz", "bzip2"} }

var (
	// DocRootDevice says what an instance's root_device hints do.
	DocRootDevice = "Hints that choose the disk an `image` deploy writes, as Ironic's root device hints: `size_gb` " +
		"(`\"100\"` or `\">= 100\"`), `serial`, `wwn`, `model`, `vendor`, `name` (`/dev/sda`). Every hint given must match, " +
		"and the smallest disk that matches is taken; a deploy whose node has no such disk fails the instance with the disks " +
		"it saw. Without hints: the smallest fixed (non-removable) disk of at least " + strconv.Itoa(RootDiskMinGiB) + " GiB, as Ironic chooses."

	// DocDeployMethod says what an instance's deploy_method does.
	DocDeployMethod = "How the image reaches the node: `image` has the controller's deploy agent write it to the node's " +
		"root disk and boots the node from disk; `live` has the BMC boot it from virtual media (an ISO) without touching " +
		"the disks. An `image` deploy takes " + orList(ImageFormats()) + " images (qcow2 is converted while it streams), " +
		"either also " + orList(ImageCompressions()) + " compressed, and verifies `image.checksum` while it streams. " +
		"Default: `image` when the controller serves the deploy agent (`--agent-kernel`), else `live`."

	// DocUserData says what an instance's user_data does and how it
	// reaches the OS.
	DocUserData = "User data (e.g. cloud-init `#cloud-config`), at most " + strconv.Itoa(MaxUserDataKiB) + " KiB, delivered to the booted OS on a config drive " +
		"(ISO 9660 labelled `config-2`, OpenStack layout: `openstack/latest/user_data`), which cloud-init, cloudbase-init " +
		"and Ignition read without configuration. An `image` deploy has the deploy agent write the config drive as a " +
		"`config-2` partition after the image on the root disk; a `live` deploy has the node's BMC attach it as a second " +
		"virtual media device, which needs a free virtual media slot and a controller `--public-url` its BMCs can reach, " +
		"so a `live` deploy is not placed on an `ipmi` node; an `image` deploy works on any node (an `ipmi` node boots the " +
		"deploy agent from the network, with `--agent-netboot`). A deploy that cannot deliver it fails, saying why."
)

// orList shows values as "a, b or c".
func orList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}

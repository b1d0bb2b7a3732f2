package disk

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// The two kinds of failure; every *Error wraps exactly one.
var (
	// ErrInput: the user's input is at fault (the image, its URL or
	// checksum, the root device hints). The instance fails; the node is
	// healthy and may take the next instance.
	ErrInput = errors.New("bad input")
	// ErrMachine: the machine is at fault (a disk that fails writes or
	// vanished, no usable disk at all). The node gets a fault.
	ErrMachine = errors.New("machine failure")
)

// Codes, stable for the controller to record and match on.
const (
	CodeChecksumInvalid  = "checksum_invalid"  // the checksum string itself is malformed
	CodeChecksumMismatch = "checksum_mismatch" // the served bytes do not hash to it
	CodeImageUnreachable = "image_unreachable" // DNS, refused, timeouts, 5xx after retries
	CodeImageNotFound    = "image_not_found"   // 404, 410
	CodeImageDenied      = "image_denied"      // 401, 403
	CodeImageHTTP        = "image_http"        // any other unexpected HTTP status
	CodeImageTLS         = "image_tls"         // the server's certificate is not trusted
	CodeImageFormat      = "image_format"      // not a raw disk image (qcow2, ISO, vmdk, ...) or corrupt compression
	CodeImageTooLarge    = "image_too_large"   // more bytes than the disk holds
	CodeImageEmpty       = "image_empty"       // zero bytes
	CodeNoRootDisk       = "no_root_disk"      // no disk fits (hints, or the default rule)
	CodePartitionTable   = "partition_table"   // the image's partition table cannot take a config drive
	CodeDiskIO           = "disk_io"           // read/write/sync error on the target
	CodeDiskGone         = "disk_gone"         // the target does not exist (any more)
	CodeEraseVerify      = "erase_verify"      // erased regions did not read back as zeros
	CodeInventory        = "inventory"         // /sys/block could not be read
)

// Error is every error this package returns. Its message is safe to show
// the user and to log: URLs in it are redacted.
type Error struct {
	Kind error  // ErrInput or ErrMachine
	Code string // one of the Code constants
	Msg  string
	Err  error // the cause, if any; its text is already in Msg

	final bool // not worth retrying even though the code usually is
}

func (e *Error) Error() string { return e.Msg }

// Unwrap gives both the kind (for errors.Is(err, ErrInput)) and the cause
// (for errors.Is(err, context.Canceled) and the like).
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// CodeOf returns the Code of err, or "" when err is not one of ours.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func inputErr(code string, cause error, format string, args ...any) *Error {
	return newErr(ErrInput, code, cause, format, args...)
}

func machineErr(code string, cause error, format string, args ...any) *Error {
	return newErr(ErrMachine, code, cause, format, args...)
}

func newErr(kind error, code string, cause error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return &Error{Kind: kind, Code: code, Msg: msg, Err: cause}
}

// RedactURL returns raw without its secrets: userinfo goes entirely (a
// user name can be a token too) and every query value is replaced, since
// presigned object-store URLs carry their signature there. The fragment
// goes too. Unparseable input is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return redact(u)
}

func redact(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User("REDACTED")
	}
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		// Keep the keys (they help a user see which URL it was), hide
		// the values; built by hand so the order is the user's.
		parts := strings.Split(c.RawQuery, "&")
		for i, p := range parts {
			k, _, _ := strings.Cut(p, "=")
			parts[i] = k + "=REDACTED"
		}
		c.RawQuery = strings.Join(parts, "&")
	}
	return c.String()
}

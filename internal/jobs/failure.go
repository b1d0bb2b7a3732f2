package jobs

import (
	"errors"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/imagecheck"
)

// failure is what went wrong with a job's work, in the terms the workers
// decide on. classify is the one switch that tells them apart, so the
// deploy, cleanup, retire and power workers read an error the same way
// and differ only in what they do about it.
type failure int

const (
	// failOther: the database, the job's own context, a bug.
	failOther failure = iota
	// failStopped: the node moved on and the job stopped on purpose.
	failStopped
	// failImage: the deploy's image is unusable (imagecheck, or the BMC
	// said so); the instance fails, not the node.
	failImage
	// failPermanent: retrying cannot help (permanentError).
	failPermanent
	// failPowerTimeout: a power change that was never observed.
	failPowerTimeout
	// failRefused: the BMC answered and refused the request in every form.
	failRefused
	// failUnsupported: the BMC lacks what the work needs.
	failUnsupported
	// failBMC: the BMC is unreachable, refused the credentials, or failed.
	failBMC
)

func classify(err error) failure {
	var (
		pt   *powerTimeoutError
		perm *permanentError
	)
	switch {
	case errors.Is(err, errStopped):
		return failStopped
	case aboutImage(err):
		return failImage
	case errors.As(err, &perm):
		return failPermanent
	case errors.As(err, &pt):
		return failPowerTimeout
	case isRefused(err):
		return failRefused
	case isBMCErr(err) && bmc.KindOf(err) == bmc.KindUnsupported:
		return failUnsupported
	case isBMCErr(err):
		return failBMC
	}
	return failOther
}

// bmcTrouble reports whether f counts in the node's BMC fault accounting
// (recordBMCFailure): every BMC error except a refusal, which is its own
// fault (recordRefused). An image failure outside a deploy (which handles
// it first) can only be a BMC's answer, and counts as one.
func (f failure) bmcTrouble() bool { return f == failBMC || f == failUnsupported || f == failImage }

// permanentError fails a deploy at once: retrying cannot help.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

// inputError is the deploy agent's report that writing the image failed
// on the user's input (unreachable, checksum, format, no disk fits), in
// its words.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// aboutImage reports whether err blames the deploy's image.
func aboutImage(err error) bool {
	var (
		ie *imagecheck.Error
		in *inputError
	)
	return errors.As(err, &ie) || errors.As(err, &in) || (isBMCErr(err) && bmc.KindOf(err) == bmc.KindImage)
}

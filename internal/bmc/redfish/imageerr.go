package redfish

import (
	"errors"
	"net/http"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/bmc"
)

// imageMessageIDs are Redfish Base registry messages that say the BMC could
// not get at an image behind a URI.
var imageMessageIDs = []string{
	"CouldNotEstablishConnection", "ResourceAtUriUnauthorized", "SourceDoesNotSupportProtocol",
}

// notImageMessageIDs are answers about the request itself, however they
// are worded: our fault (or the slot's state), never the image's.
var notImageMessageIDs = []string{
	"ActionParameterMissing", "ActionParameterUnknown", "ActionParameterNotSupported",
	"MalformedJSON", "PropertyMissing", "ResourceInUse",
}

// imageWords, in a BMC's own message, mark an answer about the image:
// sushy-tools says "Failed fetching image from URL ...", iDRAC "Unable to
// mount remote share", others "unsupported media" or name the image.
var imageWords = []string{"fetch", "download", "mount", "unsupported media", "media type", "image"}

// imageAnswer reports whether err, the answer of a BMC to inserting
// imageURL, is about the image (it could not be fetched, or is not media
// the BMC takes) rather than about the BMC. Only the BMC's own words count,
// not the context this package wrapped around them; answers that are about
// reaching the BMC, its capabilities or the form of the request are not.
func imageAnswer(err error, imageURL string) bool {
	switch statusOf(err) {
	case 0, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusNotImplemented, http.StatusRequestTimeout, http.StatusPreconditionFailed, http.StatusTooManyRequests:
		return false
	}
	e, ok := asHTTPError(err, nil) // only its message ids are read
	var he *HTTPError
	if !ok || !errors.As(e, &he) {
		return false
	}
	for _, id := range notImageMessageIDs {
		if strings.HasSuffix(he.MessageID, "."+id) || he.MessageID == id {
			return false
		}
	}
	for _, id := range imageMessageIDs {
		if strings.HasSuffix(he.MessageID, "."+id) || he.MessageID == id {
			return true
		}
	}
	if imageURL != "" && (strings.Contains(he.Message, imageURL) || strings.Contains(he.Message, redactImage(imageURL))) {
		return true
	}
	msg := strings.ToLower(he.Message)
	for _, w := range imageWords {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}

// asImageError re-kinds a classified insert error as KindImage, keeping
// its (already sanitized) message.
func asImageError(err error) error {
	var be *bmc.Error
	if !errors.As(err, &be) {
		return err
	}
	return &bmc.Error{Kind: bmc.KindImage, Op: be.Op, Err: be.Err}
}

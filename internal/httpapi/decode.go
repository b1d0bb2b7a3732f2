package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 1 << 20

// readBody reads a size-limited body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, baremetal.Errorf(baremetal.CodeTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
	}
	if err != nil {
		return nil, baremetal.Errorf(baremetal.CodeInvalid, "could not read request body: %v", err)
	}
	return body, nil
}

// decode reads the size-limited body into v, strictly; on failure it
// writes the problem response and returns false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := readBody(w, r)
	if err == nil {
		err = decodeStrict(body, v)
	}
	if err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// decodeStrict decodes exactly one JSON value into v, rejecting unknown
// fields, wrong types and trailing data with an error naming the field.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return baremetal.Errorf(baremetal.CodeInvalid, "request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		err = jsonError(err)
		var be *baremetal.Error
		if errors.As(err, &be) && strings.HasPrefix(be.Message, "unknown field ") {
			// encoding/json names only the leaf; give the full path
			// (bmc.port, not port) so the client knows where to look.
			if path := unknownFieldPath(body, reflect.TypeOf(v), be.Field); path != "" {
				be.Field, be.Message = path, fmt.Sprintf("unknown field %q", path)
			}
		}
		return err
	}
	if dec.More() {
		return baremetal.Errorf(baremetal.CodeInvalid, "request body has data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return baremetal.Errorf(baremetal.CodeInvalid, "request body has data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return baremetal.Errorf(baremetal.CodeInvalid, "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		field := te.Field
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: field,
			Message: fmt.Sprintf("%s must be %s, not %s", orBody(field), jsonKind(te.Type.Kind().String()), te.Value)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return baremetal.Errorf(baremetal.CodeInvalid, "malformed JSON: unexpected end of body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: name, Message: fmt.Sprintf("unknown field %q", name)}
	default:
		return baremetal.Errorf(baremetal.CodeInvalid, "invalid JSON: %v", err)
	}
}

func orBody(field string) string {
	if field == "" {
		return "the request body"
	}
	return field
}

func jsonKind(k string) string {
	switch k {
	case "struct", "map":
		return "an object"
	case "slice", "array":
		return "an array"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	default:
		return "a number"
	}
}

// ifMatch parses If-Match: a quoted version as sent in ETag, or absent.
// "*" means any version.
func ifMatch(r *http.Request) (int64, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" || h == "*" {
		return 0, nil
	}
	h = strings.TrimPrefix(h, "W/")
	v, err := strconv.ParseInt(strings.Trim(h, `"`), 10, 64)
	if err != nil || v <= 0 {
		return 0, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "If-Match", Message: fmt.Sprintf("If-Match %q is not an ETag this API issued", h)}
	}
	return v, nil
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// mergePatch applies an RFC 7396 JSON Merge Patch to target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// unknownFieldPath finds the dotted path of the first key named leaf in
// body that has no matching field in t.
func unknownFieldPath(body []byte, t reflect.Type, leaf string) string {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	return findUnknown(doc, t, "", leaf)
}

func findUnknown(doc any, t reflect.Type, prefix, leaf string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	obj, ok := doc.(map[string]any)
	if !ok || t.Kind() != reflect.Struct {
		return ""
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	for k, v := range obj {
		ft, known := fields[k]
		if !known {
			if k == leaf {
				return prefix + k
			}
			continue
		}
		if p := findUnknown(v, ft, prefix+k+".", leaf); p != "" {
			return p
		}
	}
	return ""
}

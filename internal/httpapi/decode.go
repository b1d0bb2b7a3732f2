package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/baremetal"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/service"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/store"
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

// decode reads the size-limited JSON body into v, strictly; on failure it
// writes the problem response and returns false.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	return s.decodeWith(w, r, v, false)
}

// decodeWith is decode; refuseNull also refuses null where v's type
// would quietly read it as "leave unchanged" (a pointer field).
func (s *Server) decodeWith(w http.ResponseWriter, r *http.Request, v any, refuseNull bool) bool {
	err := checkContentType(r)
	var body []byte
	if err == nil {
		body, err = readBody(w, r)
	}
	if err == nil {
		err = decodeBody(body, v, refuseNull)
	}
	if err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// checkContentType requires a JSON body: application/json, or on PATCH
// also application/merge-patch+json (RFC 7396), which our client sends.
// A body in any other type (a form, text/plain from a browser) is 415.
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	ok := err == nil && (mt == "application/json" || (mt == "application/merge-patch+json" && r.Method == http.MethodPatch))
	if cs, set := params["charset"]; ok && set && !strings.EqualFold(cs, "utf-8") {
		ok = false
	}
	if ok {
		return nil
	}
	want := "application/json"
	if r.Method == http.MethodPatch {
		want += " or application/merge-patch+json"
	}
	if ct == "" {
		return baremetal.Errorf(baremetal.CodeBadMediaType, "%s %s needs a JSON body: send Content-Type: %s", r.Method, r.URL.Path, want)
	}
	return baremetal.Errorf(baremetal.CodeBadMediaType, "Content-Type %q is not supported here; send %s (UTF-8)", ct, want)
}

// decodeStrict decodes exactly one JSON value into v, rejecting what the
// encoding/json package lets through: unknown fields (also in another
// letter case), duplicate keys, null where v's type cannot hold it,
// numbers that do not fit the field exactly (1.0, 1e400, 2^63 for an
// int) and trailing data. Every error names the field by its full JSON
// path (bmc.port, not port). It is the one entry point for request
// bodies, and safe to call on any input (fuzz targets do).
func decodeStrict(body []byte, v any) error { return decodeBody(body, v, false) }

func decodeBody(body []byte, v any, refuseNull bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return baremetal.Errorf(baremetal.CodeInvalid, "request body is empty; a JSON object is required")
	}
	// First walk the document against v's type: that is where the
	// checks above happen, with the path at hand.
	c := checker{dec: json.NewDecoder(bytes.NewReader(body)), refuseNull: refuseNull}
	c.dec.UseNumber()
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("decodeStrict: want a pointer, got %T", v)
	}
	if err := c.value(t.Elem(), "", 0); err != nil {
		return err
	}
	if _, err := c.dec.Token(); err != io.EOF {
		return baremetal.Errorf(baremetal.CodeInvalid, "request body has data after the JSON value")
	}
	// Then decode for real. Numbers stay exact in an any (json.Number),
	// so a merge patch carries 9007199254740993 through unchanged.
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	return nil
}

// maxDepth bounds nesting: no request body needs more than a few levels,
// and the checker recurses.
const maxDepth = 32

// checker walks a JSON document token by token alongside a Go type.
type checker struct {
	dec        *json.Decoder
	refuseNull bool
}

var (
	timeType            = reflect.TypeFor[time.Time]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value checks the next JSON value against t (nil: any JSON).
func (c *checker) value(t reflect.Type, path string, depth int) error {
	if depth > maxDepth {
		return baremetal.Errorf(baremetal.CodeInvalid, "request body is nested more than %d levels deep", maxDepth)
	}
	tok, err := c.dec.Token()
	if err != nil {
		return jsonError(err)
	}
	nullable := t == nil
	for t != nil && t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	if t != nil && t.Kind() == reflect.Interface {
		t, nullable = nil, true
	}
	if tok == nil {
		if t != nil && (t.Kind() == reflect.Map || t.Kind() == reflect.Slice) {
			nullable = true
		}
		if !nullable || c.refuseNull {
			return &baremetal.Error{Code: baremetal.CodeInvalid, Field: path,
				Message: fmt.Sprintf("%s must not be null; give a value or leave the field out", orBody(path))}
		}
		return nil
	}
	if t == nil {
		return c.anyValue(tok, path, depth)
	}
	switch {
	case t == timeType:
		s, ok := tok.(string)
		var ts time.Time
		if !ok || ts.UnmarshalText([]byte(s)) != nil {
			return &baremetal.Error{Code: baremetal.CodeInvalid, Field: path,
				Message: fmt.Sprintf("%s must be an RFC 3339 date-time such as \"2030-01-31T18:00:00Z\", got %s", orBody(path), describe(tok))}
		}
		return nil
	case reflect.PointerTo(t).Implements(unmarshalerType), reflect.PointerTo(t).Implements(textUnmarshalerType):
		return c.anyValue(tok, path, depth) // its own Unmarshal method judges it
	}
	mismatch := func(want string) error {
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: path,
			Message: fmt.Sprintf("%s must be %s, not %s", orBody(path), want, kindOf(tok))}
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return mismatch("an object")
		}
		fields := jsonFields(t)
		return c.object(path, depth, func(key, p string) error {
			ft, ok := fields[key]
			if !ok {
				return &baremetal.Error{Code: baremetal.CodeInvalid, Field: p, Message: fmt.Sprintf("unknown field %q", p)}
			}
			return c.value(ft, p, depth+1)
		})
	case reflect.Map:
		if tok != json.Delim('{') {
			return mismatch("an object")
		}
		if t.Key().Kind() != reflect.String {
			return c.object(path, depth, func(_, p string) error { return c.value(nil, p, depth+1) })
		}
		return c.object(path, depth, func(_, p string) error { return c.value(t.Elem(), p, depth+1) })
	case reflect.Slice, reflect.Array:
		if tok != json.Delim('[') {
			if t.Elem().Kind() == reflect.Uint8 { // []byte is base64 text
				if _, ok := tok.(string); ok {
					return nil
				}
			}
			return mismatch("an array")
		}
		return c.array(path, depth, t.Elem())
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return mismatch("a string")
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return mismatch("true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := tok.(json.Number)
		if !ok {
			return mismatch("an integer")
		}
		return checkInt(path, string(n), t)
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return mismatch("a number")
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits()); err != nil {
			return &baremetal.Error{Code: baremetal.CodeInvalid, Field: path,
				Message: fmt.Sprintf("%s is out of range: %s", orBody(path), clip(string(n)))}
		}
	default:
		return c.anyValue(tok, path, depth)
	}
	return nil
}

// checkInt checks that the number literal n is an integer that fits t
// exactly: encoding/json would refuse 1.0 and 1e3 without naming the
// field well, and PATCH used to round them through float64.
func checkInt(path, n string, t reflect.Type) error {
	var err error
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		_, err = strconv.ParseUint(n, 10, t.Bits())
	} else {
		_, err = strconv.ParseInt(n, 10, t.Bits())
	}
	var ne *strconv.NumError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ne) && ne.Err == strconv.ErrRange:
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: path,
			Message: fmt.Sprintf("%s is out of range: %s", orBody(path), clip(n))}
	default:
		return &baremetal.Error{Code: baremetal.CodeInvalid, Field: path,
			Message: fmt.Sprintf("%s must be a whole number without fraction or exponent, got %s", orBody(path), clip(n))}
	}
}

// object walks the members of an object whose '{' was read, refusing
// duplicate keys (encoding/json keeps the last one; other parsers the
// first, so a duplicate can mean different things to different readers).
func (c *checker) object(path string, depth int, member func(key, path string) error) error {
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return jsonError(err)
		}
		key, _ := tok.(string)
		p := key
		if path != "" {
			p = path + "." + key
		}
		if seen[key] {
			return &baremetal.Error{Code: baremetal.CodeInvalid, Field: p, Message: fmt.Sprintf("duplicate key %q", p)}
		}
		seen[key] = true
		if err := member(key, p); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // '}'
	return jsonError(err)
}

func (c *checker) array(path string, depth int, elem reflect.Type) error {
	for i := 0; c.dec.More(); i++ {
		if err := c.value(elem, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // ']'
	return jsonError(err)
}

// anyValue checks a value of any shape whose first token was read.
func (c *checker) anyValue(tok json.Token, path string, depth int) error {
	switch tok {
	case json.Delim('{'):
		return c.object(path, depth, func(_, p string) error { return c.value(nil, p, depth+1) })
	case json.Delim('['):
		return c.array(path, depth, nil)
	}
	return nil
}

// jsonFields maps the JSON names of t's fields to their types, as
// encoding/json sees them (embedded structs are flattened), but matched
// exactly: encoding/json also takes "NAME" for "name".
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				if _, shadowed := fields[k]; !shadowed {
					fields[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

// kindOf names the JSON kind of a token for messages.
func kindOf(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// describe shows a scalar token for a message, or its kind.
func describe(tok json.Token) string {
	if s, ok := tok.(string); ok {
		return strconv.Quote(clip(s))
	}
	return kindOf(tok)
}

// clip shortens an echoed value: an error need not repeat a megabyte.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return strings.ToValidUTF8(s[:40], "") + "…"
}

func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
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

// ifMatch reads If-Match (RFC 9110 section 13.1.1) as the version the
// service must find: 0 when the header is absent or "*" (any current
// version; the resource must exist, which the lookup checks). A
// well-formed header that can match no version (a weak tag, which never
// matches under the strong comparison If-Match uses, or an entity tag
// this API never issued) is 412, as the RFC says, and nothing changes. A
// malformed header is 400. When the list names several versions, current
// reads the resource's version to pick the one that can match (the
// service checks it again, so a write in between is still a 412).
func ifMatch(r *http.Request, current func() (int64, error)) (int64, error) {
	values := r.Header.Values("If-Match")
	if len(values) == 0 {
		return 0, nil
	}
	h := strings.TrimSpace(strings.Join(values, ","))
	if h == "*" {
		return 0, nil
	}
	tags, ok := parseETags(h)
	if !ok {
		return 0, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "If-Match",
			Message: fmt.Sprintf("If-Match %q is not \"*\" or a list of entity tags such as \"3\"", clip(h))}
	}
	var versions []int64
	for _, tag := range tags {
		v, err := strconv.ParseInt(tag[1:len(tag)-1], 10, 64)
		if err != nil || v <= 0 || etag(v) != tag {
			continue // not an ETag of ours: it matches no version
		}
		versions = append(versions, v)
	}
	if len(versions) > 1 {
		have, err := current()
		if err != nil {
			return 0, err
		}
		if slices.Contains(versions, have) {
			return have, nil
		}
		versions = nil
	}
	if len(versions) == 0 {
		return 0, baremetal.Errorf(baremetal.CodePrecondition, "If-Match %s matches no current version of this resource; re-read it for its ETag", clip(h))
	}
	return versions[0], nil
}

// nodeVersion and instanceVersion read the current version for ifMatch.
func (s *Server) nodeVersion(r *http.Request, c service.Caller) func() (int64, error) {
	return func() (int64, error) {
		n, err := s.svc.GetNode(r.Context(), c, r.PathValue("id"))
		if err != nil {
			return 0, err
		}
		return n.Version, nil
	}
}

func (s *Server) instanceVersion(r *http.Request, c service.Caller) func() (int64, error) {
	return func() (int64, error) {
		i, err := s.svc.GetInstance(r.Context(), c, r.PathValue("id"))
		if err != nil {
			return 0, err
		}
		return i.Version, nil
	}
}

// parseETags splits a comma-separated list of entity tags, keeping the
// quoted strong ones ("3", quotes included) and dropping weak ones
// (W/"3"). ok is false when the list is malformed.
func parseETags(h string) (strong []string, ok bool) {
	for _, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue // RFC 9110 lists allow empty elements
		}
		weak := strings.HasPrefix(part, "W/")
		tag := strings.TrimPrefix(part, "W/")
		if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
			return nil, false
		}
		for _, c := range []byte(tag[1 : len(tag)-1]) {
			if c == '"' || c < 0x21 || c == 0x7f { // etagc = %x21 / %x23-7E / obs-text
				return nil, false
			}
		}
		if !weak {
			strong = append(strong, tag)
		}
	}
	return strong, true
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

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header. The scheme is case-insensitive (RFC 9110 section 11.1), so
// "bearer" and "BEARER" work too.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// canonicalPath reports whether p has no empty, "." or ".." segments.
// http.ServeMux answers other paths with a redirect to the cleaned path:
// an HTML page, to a resource the client did not name.
func canonicalPath(p string) bool {
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// limitParam reads ?limit=, an integer from 1 to store.MaxPageLimit; ok
// is false when it is absent.
func limitParam(r *http.Request) (limit int, ok bool, err error) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > store.MaxPageLimit {
		return 0, false, &baremetal.Error{Code: baremetal.CodeInvalid, Field: "limit",
			Message: "limit must be an integer between 1 and " + strconv.Itoa(store.MaxPageLimit)}
	}
	return n, true, nil
}

// maxIdempotencyKey bounds an Idempotency-Key header.
const maxIdempotencyKey = 255

// once reads a create's Idempotency-Key header and hashes the body it
// comes with (body is read and put back for decode). No header: an
// ordinary create.
func once(w http.ResponseWriter, r *http.Request) (service.Once, error) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		return service.Once{}, nil
	}
	if len(key) > maxIdempotencyKey || strings.IndexFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
		return service.Once{}, baremetal.FieldErrorf("Idempotency-Key", "the Idempotency-Key header must be 1 to %d printable ASCII characters without spaces", maxIdempotencyKey)
	}
	body, err := readBody(w, r)
	if err != nil {
		return service.Once{}, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	return service.Once{Key: key, RequestHash: hex.EncodeToString(sum[:])}, nil
}

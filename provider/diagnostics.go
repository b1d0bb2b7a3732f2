package provider

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// configuredClient extracts the API client the provider hands to resources
// and data sources. It returns nil, without a diagnostic, before the
// provider is configured (validation runs then).
func configuredClient(providerData any, diags *diag.Diagnostics) *apiclient.Client {
	if providerData == nil {
		return nil
	}
	c, ok := providerData.(*apiclient.Client)
	if !ok {
		diags.AddError("Unexpected provider data",
			fmt.Sprintf("Expected *apiclient.Client, got %T. This is a bug in the provider; please report it.", providerData))
		return nil
	}
	return c
}

// attrKind tells fieldPath how to walk below a top-level attribute.
type attrKind int

const (
	attrPlain  attrKind = iota // string, bool, number: no children
	attrObject                 // single nested: children by name
	attrMap                    // map: children by key
	attrList                   // list of objects: children by index, then name
)

// fieldPath maps the API's JSON path of an offending field ("bmc.address",
// "metadata.role") to the attribute path in a schema whose top-level
// attributes are described by attrs. It reports false for a field the
// schema does not have (a header, a query parameter).
func fieldPath(field string, attrs map[string]attrKind) (path.Path, bool) {
	if field == "" {
		return path.Empty(), false
	}
	root, rest, nested := strings.Cut(field, ".")
	kind, ok := attrs[root]
	if name, idx, isElem := strings.Cut(root, "["); !ok && isElem && attrs[name] == attrList {
		// An element of a list of objects ("raid[1].drive_count").
		i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
		if err != nil {
			return path.Root(name), true
		}
		p := path.Root(name).AtListIndex(i)
		if nested {
			p = p.AtName(strings.Split(rest, "[")[0])
		}
		return p, true
	}
	if !ok {
		// An element of a set ("traits[2]"): sets have no index in
		// Terraform, the diagnostic points at the whole attribute.
		if name, _, isElem := strings.Cut(root, "["); isElem && !nested {
			if k, known := attrs[name]; known && k == attrPlain {
				return path.Root(name), true
			}
		}
		return path.Empty(), false
	}
	p := path.Root(root)
	if !nested {
		return p, true
	}
	switch kind {
	case attrMap:
		return p.AtMapKey(rest), true
	case attrObject:
		// Names, and list elements as name[i] ("interfaces[1].vlan.id").
		for _, seg := range strings.Split(rest, ".") {
			name, idx, isList := strings.Cut(seg, "[")
			p = p.AtName(name)
			if isList {
				i, err := strconv.Atoi(strings.TrimSuffix(idx, "]"))
				if err != nil {
					return path.Root(root), true
				}
				p = p.AtListIndex(i)
			}
		}
		return p, true
	default:
		return p, true
	}
}

// addAPIError turns err into a diagnostic. An API problem keeps the
// controller's own explanation; when it names a field the schema has, the
// diagnostic points at that attribute.
func addAPIError(diags *diag.Diagnostics, summary string, err error, attrs map[string]attrKind) {
	ae, ok := apiclient.AsAPIError(err)
	if !ok {
		detail := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			detail += "\n\nThe operation's timeout expired. Raise it in the resource's timeouts block, or the provider's timeout for single requests."
		}
		diags.AddError(summary, detail)
		return
	}
	detail := ae.Detail()
	// What err says beyond the API's answer (a wait that gave up, say).
	if msg := err.Error(); strings.HasPrefix(msg, ae.Error()) {
		if extra := strings.TrimSpace(strings.TrimPrefix(msg, ae.Error())); extra != "" {
			detail += "\n\n" + extra
		}
	}
	if hint := hintFor(ae); hint != "" {
		detail += "\n\n" + hint
	}
	detail += fmt.Sprintf("\n\n(%s %s answered %d %s)", ae.Method, ae.Path, ae.StatusCode(), orStatus(string(ae.Problem.Code)))
	if p, ok := fieldPath(ae.Field(), attrs); ok {
		diags.AddAttributeError(p, summary, detail)
		return
	}
	diags.AddError(summary, detail)
}

func orStatus(code string) string {
	if code == "" {
		return "error"
	}
	return code
}

func hintFor(ae *apiclient.APIError) string {
	switch {
	case errors.Is(ae, apiclient.ErrUnauthorized):
		return "Check the provider's token (or " + EnvToken + "): it is missing, expired or revoked."
	case errors.Is(ae, apiclient.ErrQuotaExceeded):
		return ""
	case errors.Is(ae, apiclient.ErrForbidden):
		return "The provider's token lacks the role for this: nodes (and their maintenance) need an admin token; " +
			"a member token manages only its own project's instances."
	}
	return ""
}

// stringOrNull maps the API's empty string to null, for optional
// attributes the user may leave out.
func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// urlValidator checks that a string is an http(s) URL with a host.
type urlValidator struct{}

var _ validator.String = urlValidator{}

func (urlValidator) Description(context.Context) string {
	return "value must be an http:// or https:// URL"
}

func (v urlValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (urlValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	u, err := url.Parse(req.ConfigValue.ValueString())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid URL",
			fmt.Sprintf("%s must be an http:// or https:// URL with a host, got %q.", req.Path, req.ConfigValue.ValueString()))
	}
}

// durationValidator checks that a string is a positive Go duration.
// durationBetween checks a Go duration within [min, max], naming the
// attribute, so the mistake shows at plan time, not after a create call.
type durationBetween struct{ min, max time.Duration }

var _ validator.String = durationBetween{}

func (v durationBetween) Description(context.Context) string {
	return fmt.Sprintf("value must be a Go duration between %s and %s, such as 30m", shortDuration(v.min), shortDuration(v.max))
}

func (v durationBetween) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v durationBetween) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d < v.min || d > v.max {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s must be a duration between %s and %s such as \"30m\" or \"1h30m\", got %q.",
				req.Path, shortDuration(v.min), shortDuration(v.max), req.ConfigValue.ValueString()))
	}
}

// shortDuration writes 1m, not 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

type durationValidator struct{}

var _ validator.String = durationValidator{}

func (durationValidator) Description(context.Context) string {
	return "value must be a positive Go duration such as 30s or 5m"
}

func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if d, err := time.ParseDuration(req.ConfigValue.ValueString()); err != nil || d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid duration",
			fmt.Sprintf("%s must be a positive Go duration such as 30s or 5m, got %q.", req.Path, req.ConfigValue.ValueString()))
	}
}

// codeList writes values for a MarkdownDescription: "`a`, `b` or `c`".
func codeList(values []string) string {
	q := codeQuoted(values)
	if len(q) < 2 {
		return strings.Join(q, "")
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// codeQuoted puts each value in backquotes (Markdown code).
func codeQuoted(values []string) []string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "`" + v + "`"
	}
	return q
}

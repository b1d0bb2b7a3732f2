// Package provider is the Terraform provider for the baremetal controller,
// built on terraform-plugin-framework (protocol 6). It talks to the
// controller only through internal/apiclient, exactly as any other client.
package provider

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/baremetal-tf/terraform-provider-baremetal/internal/api"
	"github.com/baremetal-tf/terraform-provider-baremetal/internal/apiclient"
)

// Environment variables the provider falls back to.
const (
	EnvEndpoint = "BAREMETAL_ENDPOINT"
	EnvToken    = "BAREMETAL_TOKEN"
)

const defaultRequestTimeout = 30 * time.Second

var _ provider.Provider = &BaremetalProvider{}

// BaremetalProvider is the provider.
type BaremetalProvider struct {
	version string
}

// New returns a constructor of the provider at version, as
// providerserver.Serve wants.
func New(version string) func() provider.Provider {
	return func() provider.Provider {
		return &BaremetalProvider{version: version}
	}
}

type providerModel struct {
	Endpoint types.String `tfsdk:"endpoint"`
	Token    types.String `tfsdk:"token"`
	CAFile   types.String `tfsdk:"ca_file"`
	Insecure types.Bool   `tfsdk:"insecure"`
	Timeout  types.String `tfsdk:"timeout"`
}

func (p *BaremetalProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "baremetal"
	resp.Version = p.version
}

func (p *BaremetalProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The `baremetal` provider manages physical servers (nodes) and the instances deployed on them " +
			"through the baremetal controller's REST API.\n\n" +
			"Node management (`baremetal_node`, maintenance) needs an **admin** token; a **member** token may manage " +
			"its project's `baremetal_instance`s and read nodes' capacity and health.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{
				MarkdownDescription: "Base URL of the controller, e.g. `https://baremetal.example.com:8443`. " +
					"Defaults to the `" + EnvEndpoint + "` environment variable.",
				Optional:   true,
				Validators: []validator.String{urlValidator{}},
			},
			"token": schema.StringAttribute{
				MarkdownDescription: "API bearer token. Defaults to the `" + EnvToken + "` environment variable. " +
					"Prefer the environment variable to keep the token out of configuration files.",
				Optional:  true,
				Sensitive: true,
			},
			"ca_file": schema.StringAttribute{
				MarkdownDescription: "Path to a PEM bundle of certificate authorities to trust, in addition to the system's, " +
					"when `endpoint` is HTTPS.",
				Optional: true,
			},
			"insecure": schema.BoolAttribute{
				MarkdownDescription: "Skip verification of the controller's TLS certificate. For tests only. Defaults to `false`.",
				Optional:            true,
			},
			"timeout": schema.StringAttribute{
				MarkdownDescription: "Timeout of each HTTP request to the controller, as a Go duration (`30s`, `2m`). " +
					"Failed requests are retried with backoff when that is safe. Defaults to `30s`.",
				Optional:   true,
				Validators: []validator.String{durationValidator{}},
			},
		},
	}
}

func (p *BaremetalProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for name, v := range map[string]interface{ IsUnknown() bool }{
		"endpoint": cfg.Endpoint, "token": cfg.Token, "ca_file": cfg.CAFile, "insecure": cfg.Insecure, "timeout": cfg.Timeout,
	} {
		if v.IsUnknown() {
			resp.Diagnostics.AddAttributeError(path.Root(name), "Unknown provider "+name,
				"The provider's "+name+" depends on a value that is only known after apply. "+
					"Set it from a variable or a value known at plan time, or apply the resources it depends on first (-target).")
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}

	endpoint := strings.TrimSpace(os.Getenv(EnvEndpoint))
	if !cfg.Endpoint.IsNull() {
		endpoint = cfg.Endpoint.ValueString()
	}
	token := os.Getenv(EnvToken)
	if !cfg.Token.IsNull() {
		token = cfg.Token.ValueString()
	}
	token = strings.TrimSpace(token)
	if endpoint == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Missing controller endpoint",
			"Set the provider's endpoint argument or the "+EnvEndpoint+" environment variable to the controller's URL, "+
				"e.g. http://127.0.0.1:8080.")
	}
	if token == "" {
		resp.Diagnostics.AddAttributeError(path.Root("token"), "Missing API token",
			"Set the provider's token argument or the "+EnvToken+" environment variable to an API token of the controller.")
	}
	timeout := defaultRequestTimeout
	if !cfg.Timeout.IsNull() {
		d, err := time.ParseDuration(cfg.Timeout.ValueString())
		if err != nil || d <= 0 {
			resp.Diagnostics.AddAttributeError(path.Root("timeout"), "Invalid timeout",
				fmt.Sprintf("timeout %q must be a positive Go duration such as 30s or 2m.", cfg.Timeout.ValueString()))
		}
		timeout = d
	}
	if resp.Diagnostics.HasError() {
		return
	}

	client, err := apiclient.New(endpoint, apiclient.Options{
		Token:     token,
		CAFile:    cfg.CAFile.ValueString(),
		Insecure:  cfg.Insecure.ValueBool(),
		Timeout:   timeout,
		UserAgent: fmt.Sprintf("%s/%s terraform/%s", api.ClientProvider, p.version, req.TerraformVersion),
		Log: func(ctx context.Context, msg string, fields map[string]any) {
			tflog.Debug(ctx, msg, fields)
		},
	})
	if err != nil {
		attr := path.Root("endpoint")
		if strings.Contains(err.Error(), "CA") {
			attr = path.Root("ca_file")
		}
		resp.Diagnostics.AddAttributeError(attr, "Invalid provider configuration", err.Error())
		return
	}
	tflog.Debug(ctx, "baremetal provider configured", map[string]any{"endpoint": client.Endpoint()})
	resp.DataSourceData = client
	resp.ResourceData = client
}

func (p *BaremetalProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewNodeResource,
		NewInstanceResource,
		NewIPPoolResource,
	}
}

func (p *BaremetalProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		NewNodeDataSource,
		NewNodesDataSource,
		NewCapacityDataSource,
		NewIPPoolDataSource,
	}
}

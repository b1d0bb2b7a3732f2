// Command terraform-provider-baremetal is the Terraform provider for the
// baremetal controller.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/baremetal-tf/terraform-provider-baremetal/provider"
)

// version is set by the release build (-ldflags "-X main.version=1.2.3").
var version = "dev"

// protocolVersion is the plugin protocol the provider serves;
// terraform-registry-manifest.json declares it to the registries
// (release_test.go checks that they agree).
const protocolVersion = 6

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address:         "registry.terraform.io/baremetal-tf/baremetal",
		Debug:           debug,
		ProtocolVersion: protocolVersion,
	})
	if err != nil {
		log.Fatal(err)
	}
}

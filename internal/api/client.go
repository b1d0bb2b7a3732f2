package api

// Clients say what they are in every request, so that a node's events
// tell whether a change came through Terraform, the CLI, the dashboard or
// another API client, beside the token's name (who). Programs say it in
// User-Agent, as product/version; the dashboard, whose browser does not
// let a page set User-Agent, sends ClientHeader instead, which wins. It is
// what the client claims, as User-Agent always is: the token is the
// identity that the API checks.
const ClientHeader = "Baremetal-Client"

// MaxClientLen bounds ClientHeader (longer is refused) and the client
// events name (a longer User-Agent is cut), in bytes.
const MaxClientLen = 128

// The products of this repository's clients: the first word of what they
// send, before a slash and the version.
const (
	ClientProvider  = "terraform-provider-baremetal"
	ClientCLI       = "baremetal-controller-cli"
	ClientDashboard = "baremetal-dashboard"
)

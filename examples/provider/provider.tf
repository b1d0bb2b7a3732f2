# The endpoint and token may also come from the environment:
#   export BAREMETAL_ENDPOINT=https://baremetal.example.com:8443
#   export BAREMETAL_TOKEN=...
provider "baremetal" {
  endpoint = "https://baremetal.example.com:8443"

  # Trust a private CA for the controller's certificate.
  ca_file = "/etc/ssl/baremetal-ca.pem"

  # Per-request timeout; failed requests are retried when that is safe.
  timeout = "30s"
}

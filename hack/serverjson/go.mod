module github.com/garraia/garra/hack/serverjson

go 1.26.8

require (
	github.com/modelcontextprotocol/registry v1.8.9
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
)

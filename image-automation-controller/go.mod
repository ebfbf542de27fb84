module github.com/eddyops/eddy/image-automation-controller

go 1.26.0

replace (
	github.com/eddyops/eddy/api => ../api
	github.com/eddyops/eddy/pkg => ../pkg
)

require (
	github.com/cyphar/filepath-securejoin v0.7.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

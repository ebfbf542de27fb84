module github.com/eddyops/eddy/config

go 1.26.0

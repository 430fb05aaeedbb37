module github.com/baracuda-go/baracuda

go 1.25.0

require github.com/ebitengine/purego v0.11.3

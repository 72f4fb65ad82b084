module github.com/parleyhq/parley

go 1.26

require (
	github.com/expr-lang/expr v1.17.8
	gopkg.in/yaml.v3 v3.0.1
)

require github.com/beevik/etree v1.8.1 // indirect

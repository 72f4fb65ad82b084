module github.com/parleyhq/parley/bench

go 1.26.0

require (
	github.com/looplab/fsm v1.0.3
	github.com/parleyhq/parley v0.0.0
	github.com/qmuntal/stateless v1.7.2
	github.com/stretchr/testify v1.11.1
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/beevik/etree v1.8.1 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/expr-lang/expr v1.17.8 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/parleyhq/parley => ../

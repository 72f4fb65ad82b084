//go:build js && wasm

// Command wasm is the playground's WebAssembly module: it puts a parley
// object on the page's global scope whose functions run cpvalidate's
// checks (see package api) and return JSON text:
//
//	parley.check(format, policyText)
//	parley.project(format, policyText, role)
//	parley.trace(format, policyText, traceText, bind)
//	parley.examples()
//
// format is "yaml" or "xml". When the functions are in place it calls
// the page's parleyReady function, if there is one.
package main

import (
	"encoding/json"
	"syscall/js"

	"github.com/parleyhq/parley/cmd/playground/internal/api"
)

// fn wraps f as a JS function of n string arguments returning JSON; a
// call with fewer arguments, or ones that are not strings, gets
// {"error": ...} rather than a panic.
func fn(n int, f func(args []string) any) js.Func {
	return js.FuncOf(func(_ js.Value, argv []js.Value) any {
		args := make([]string, n)
		for i := range args {
			if i >= len(argv) || argv[i].Type() != js.TypeString {
				return encode(map[string]string{"error": "parley: expected string arguments"})
			}
			args[i] = argv[i].String()
		}
		return encode(f(args))
	})
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return string(b)
}

func main() {
	parley := js.Global().Get("Object").New()
	parley.Set("check", fn(2, func(a []string) any { return api.Check(a[0], a[1]) }))
	parley.Set("project", fn(3, func(a []string) any { return api.Project(a[0], a[1], a[2]) }))
	parley.Set("trace", fn(4, func(a []string) any { return api.Trace(a[0], a[1], a[2], a[3]) }))
	parley.Set("examples", fn(0, func([]string) any { return api.Examples() }))
	js.Global().Set("parley", parley)
	if ready := js.Global().Get("parleyReady"); ready.Type() == js.TypeFunction {
		ready.Invoke()
	}
	select {} // serve calls until the page goes away
}

package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/schema"
)

// A tool can serve the schemas as they are, or read them; here, the
// JSON Schema's identity and the keys a policy file must have.
func Example() {
	var s struct {
		ID       string   `json:"$id"`
		Title    string   `json:"title"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(schema.JSON, &s); err != nil {
		panic(err)
	}
	fmt.Println(s.ID)
	fmt.Println(s.Title)
	fmt.Println(s.Required)
	// Output:
	// https://raw.githubusercontent.com/parleyhq/parley/main/schema/policy.schema.json
	// Parley conversation policy (YAML)
	// [policy version roles states]
}

package policy_test

import (
	"testing"

	"github.com/parleyhq/parley/policy"
)

func TestCheckChildPolicies(t *testing.T) {
	withHaggle := []policy.CheckOption{policy.WithPolicies(childPolicies(t))}
	runCheckCases(t, []checkCase{
		{name: "every role bound and every outcome handled", src: purchaseYAML, opts: withHaggle},
		{
			name:  "a child role left unbound",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"roles: {Buyer: Customer, Seller: Vendor}", "roles: {Buyer: Customer}"}},
			want:  []string{`test.yaml:16:7: error: role "Seller" of child policy "haggle" is not bound to a role of "purchase"; add it under roles [CP030]`},
		},
		{
			name:  "a binding for a role the child does not have",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"roles: {Buyer: Customer, Seller: Vendor}", "roles: {Buyer: Customer, Seller: Vendor, Sellr: Vendor}"}},
			want:  []string{`test.yaml:17:48: error: child policy "haggle" has no role "Sellr"; did you mean "Seller"? [CP030]`},
		},
		{
			name:  "a misspelt binding: unknown role and unbound role",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"roles: {Buyer: Customer, Seller: Vendor}", "roles: {Byer: Customer, Seller: Vendor}"}},
			want: []string{
				`test.yaml:16:7: error: role "Buyer" of child policy "haggle" is not bound to a role of "purchase"; add it under roles [CP030]`,
				`test.yaml:17:15: error: child policy "haggle" has no role "Byer"; did you mean "Buyer"? [CP030]`,
			},
		},
		{
			name:  "a child-return for an outcome the child never produces",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"{return: agreement, next: bought}", "{return: agreemnt, next: bought}"}},
			want: []string{
				`test.yaml:14:3: error: in-child state "negotiating" has no child-return for outcome "agreement" of child policy "haggle": a child that ends so leaves the conversation stuck [CP015]`,
				`test.yaml:19:9: error: child policy "haggle" never ends with outcome "agreemnt"; did you mean "agreement"? [CP010]`,
			},
		},
		{
			name:  "an outcome of the child left unhandled",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"      - {return: no-deal, next: declined}\n", ""}},
			want:  []string{`test.yaml:14:3: error: in-child state "negotiating" has no child-return for outcome "no-deal" of child policy "haggle": a child that ends so leaves the conversation stuck [CP015]`},
		},
		{
			name:  "without WithPolicies the child is not inspected",
			src:   purchaseYAML,
			edits: []edit{{"roles: {Buyer: Customer, Seller: Vendor}", "roles: {Buyer: Customer}"}},
		},
		{
			name:  "an unknown child policy is only unresolved",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"policy: haggle", "policy: barter"}},
			want:  []string{`test.yaml:16:15: error: child policy "barter" is not known: check it together with this one (name both files to cpvalidate), or give the checks a resolver that finds it (policy.WithPolicies, engine.WithPolicies) [CP010]`},
		},
	})
}

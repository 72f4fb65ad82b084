package policy

// Performatives lists FIPA's 22 communicative acts (SC00037J). A message
// type's performative must be one of them, or an extension performative
// its policy declares (Policy.Performatives).
var Performatives = []string{
	"accept-proposal", "agree", "cancel", "cfp", "confirm", "disconfirm",
	"failure", "inform", "inform-if", "inform-ref", "not-understood",
	"propagate", "propose", "proxy", "query-if", "query-ref", "refuse",
	"reject-proposal", "request", "request-when", "request-whenever",
	"subscribe",
}

// IsFIPA reports whether performative is one of FIPA's 22 communicative
// acts.
func IsFIPA(performative string) bool { return contains(Performatives, performative) }

// AllowsPerformative reports whether p's message types may use
// performative: it is one of FIPA's, or p declares it as an extension.
func (p *Policy) AllowsPerformative(performative string) bool {
	if IsFIPA(performative) {
		return true
	}
	for _, r := range p.Performatives {
		if r.Name == performative {
			return true
		}
	}
	return false
}

// performativeNames returns FIPA's performatives and the extensions p
// declares, for suggestions.
func (p *Policy) performativeNames() []string {
	out := make([]string, 0, len(Performatives)+len(p.Performatives))
	out = append(out, Performatives...)
	for _, r := range p.Performatives {
		out = append(out, r.Name)
	}
	return out
}

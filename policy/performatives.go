package policy

// Performatives lists FIPA's 22 communicative acts (SC00037J). A message
// type's performative must be one of them.
var Performatives = []string{
	"accept-proposal", "agree", "cancel", "cfp", "confirm", "disconfirm",
	"failure", "inform", "inform-if", "inform-ref", "not-understood",
	"propagate", "propose", "proxy", "query-if", "query-ref", "refuse",
	"reject-proposal", "request", "request-when", "request-whenever",
	"subscribe",
}

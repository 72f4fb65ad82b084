// Package natsembed runs a NATS server with JetStream inside the
// process, for the tests and examples of transport/nats and
// store/natskv, and says which permissions a Parley agent's NATS user
// needs.
package natsembed

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start runs a NATS server with JetStream storing under dir, listening
// on 127.0.0.1 at port (-1: a free port), with users when any are given.
// It returns once the server accepts connections.
func Start(dir string, port int, users ...*server.User) (*server.Server, error) {
	o := &server.Options{
		Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir,
		NoLog: true, NoSigs: true, Users: users,
	}
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("nats server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("nats server: not ready after 10 s")
	}
	return s, nil
}

// Names are the subjects, stream, consumer and bucket of a deployment,
// as transport/nats and store/natskv name them by default.
type Names struct {
	Prefix, Stream, Bucket string
}

// Defaults are the names transport/nats and store/natskv use by default.
var Defaults = Names{Prefix: "parley.msg", Stream: "PARLEY", Bucket: "parley"}

// InboxPrefix is the prefix of agent's reply subjects when its user has
// Permissions.
func InboxPrefix(agent string) string { return "_INBOX_" + agent }

// Permissions are what agent's NATS user may do: publish messages only
// as agent (<prefix>.*.<agent>), acknowledge only its own consumer's
// messages, write only its own keys, and use the JetStream API only on
// its own consumer and keys, and receive only on its own inboxes. The stream and bucket must exist (an
// administrator creates them; see docs/nats.md).
func Permissions(n Names, agent string) *server.Permissions {
	consumer := "parley-" + agent
	kvStream := "KV_" + n.Bucket
	kvKeys := "$KV." + n.Bucket + "." + agent + ".>"
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			n.Prefix + ".*." + agent,
			"$JS.ACK." + n.Stream + "." + consumer + ".>",
			kvKeys,
			"$JS.API.INFO",
			"$JS.API.STREAM.INFO." + n.Stream,
			"$JS.API.STREAM.INFO." + kvStream,
			"$JS.API.CONSUMER.CREATE." + n.Stream + "." + consumer + ".>",
			"$JS.API.CONSUMER.INFO." + n.Stream + "." + consumer,
			"$JS.API.CONSUMER.MSG.NEXT." + n.Stream + "." + consumer,
			"$JS.API.DIRECT.GET." + kvStream + "." + kvKeys,
			"$JS.API.CONSUMER.CREATE." + kvStream + ".*." + kvKeys,
			"$JS.API.CONSUMER.DELETE." + kvStream + ".*",
		}},
		// Replies (publish acknowledgements, deliveries of pull
		// consumers) come to the agent's own inboxes only: connect with
		// nats.CustomInboxPrefix(InboxPrefix(agent)).
		Subscribe: &server.SubjectPermission{Allow: []string{InboxPrefix(agent) + ".>"}},
	}
}

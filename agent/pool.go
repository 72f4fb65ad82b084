package agent

import "sync/atomic"

// maxIdleDeciders bounds the goroutines a pool keeps waiting for
// decisions.
const maxIdleDeciders = 64

// pool runs decision logic off the workers on goroutines that outlive a
// decision: a decision does not pay for a new goroutine and the growth
// of its stack. When no pooled goroutine is free a new one starts, so a
// slow decider never holds up another; at most maxIdleDeciders wait for
// work, and they stop when the manager closes.
type pool struct {
	jobs chan *decisionJob
	quit chan struct{}
	idle atomic.Int32
}

func newPool() *pool { return &pool{jobs: make(chan *decisionJob), quit: make(chan struct{})} }

// run runs j on a pooled goroutine, or a new one.
func (p *pool) run(j *decisionJob) {
	select {
	case p.jobs <- j:
	default:
		go p.loop(j)
	}
}

func (p *pool) loop(j *decisionJob) {
	for {
		j.run()
		if p.idle.Add(1) > maxIdleDeciders {
			p.idle.Add(-1)
			return
		}
		select {
		case j = <-p.jobs:
			p.idle.Add(-1)
		case <-p.quit:
			return
		}
	}
}

// close stops the waiting goroutines; those running finish their job.
func (p *pool) close() { close(p.quit) }

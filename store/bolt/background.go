package bolt

import (
	"cmp"
	"slices"

	"go.etcd.io/bbolt"
)

// A checkpoint of a large log runs in the background: the commit that
// fills the log file to the checkpoint size writes its record to the log
// file as any other, and a goroutine then folds the window, that record
// included, into the tables (fold, in one synced bbolt transaction that
// records the commit's sequence number as checkpointed through). The
// commits meanwhile go on at the log file's end, past the checkpoint
// size; their changes are indexed apart. Once the background checkpoint
// is done, the next commit takes its result (takeBackground): the window
// keeps only the records after it, and the commit folds them (with its
// own changes, in the commit as when the log is small, or in the
// background again when they are at least minBackground bytes), after
// which the log file starts over at offset 0.
//
// The log file is read as before after a crash: the records after the
// checkpoint are one run from offset 0, those a background checkpoint
// folded skipped by their numbers. The log file grows to twice the
// checkpoint size (and one commit) at most: while a background
// checkpoint is under way, a commit that would take it further waits
// for it, and once none is, such a commit folds the log itself, as one
// larger than the checkpoint size does. A failed background checkpoint
// changes nothing:
// the next commit folds the window again, and once the log file is
// twice the checkpoint size, a failed fold fails its commit.
//
// While the background checkpoint runs, it alone uses the table's slots
// and outbox entries (slots, next, tabled, moved, outMoved); Commit
// leaves them to it, and Load and Close wait for it.

// minBackgroundFold is the least log a checkpoint folds in the
// background (a 32nd of the checkpoint size, if larger): a smaller one
// costs its commit little more than the two syncs of any checkpoint.
const minBackgroundFold = 256 << 10

// background is a checkpoint under way in the background: it folds
// window (the window up to it, which the window after it does not
// share), whose changes are ix, and lost, through commit seq; done is
// closed once it is over, with err.
type background struct {
	window []byte
	seq    uint64
	ix     windowIndex
	lost   []walLost
	done   chan struct{}
	err    error
}

// minBackground is the least log a checkpoint folds in the background.
func (s *Store) minBackground() int { return max(minBackgroundFold, s.checkpoint/32) }

// startBackground folds the window, through the last commit, in the
// background; the changes of the next commits go to an index of their
// own.
func (s *Store) startBackground() {
	bg := &background{window: s.window, seq: s.seq, ix: s.ix, lost: s.lost, done: make(chan struct{})}
	s.window = s.takeRoom()
	s.ix, s.spare, s.lost = s.spare, windowIndex{}, nil
	s.background = bg
	go func() {
		defer close(bg.done)
		bg.err = foldBackground(s, bg)
	}()
}

// foldBackground folds what bg holds into the tables, in one bbolt
// transaction (the tests make it fail).
var foldBackground = func(s *Store, bg *background) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return s.fold(tx, &bg.ix, bg.lost, bg.seq) })
}

// takeBackground takes the result of the background checkpoint, if one
// is done (or, with wait, once it is): done, the window is the records
// after it, and if there are none the log file starts over; failed, the
// window is the whole window again, and its changes those of it all.
func (s *Store) takeBackground(wait bool) {
	bg := s.background
	if bg == nil {
		return
	}
	if wait {
		<-bg.done
	} else {
		select {
		case <-bg.done:
		default:
			return
		}
	}
	s.background = nil
	if bg.err != nil {
		after := s.ix
		s.window = append(bg.window[:len(bg.window):len(bg.window)], s.window...)
		s.ix, s.lost = bg.ix, append(bg.lost, s.lost...)
		s.ix.convOps = append(s.ix.convOps, after.convOps...)
		s.ix.outOps = append(s.ix.outOps, after.outOps...)
		return
	}
	s.moveTabled()
	bg.ix.reset()
	s.spare = bg.ix
	s.putRoom(bg.window)
	if len(s.window) == 0 {
		s.restart()
	}
}

// takeRoom returns the largest room kept for a window, emptied, or nil.
func (s *Store) takeRoom() []byte {
	n := len(s.rooms)
	if n == 0 {
		return nil
	}
	room := s.rooms[n-1]
	s.rooms[n-1], s.rooms = nil, s.rooms[:n-1]
	return room[:0]
}

// putRoom keeps the room of window, which nothing refers to any more,
// for a later window: the two largest rooms at most, largest last, and
// none larger than twice the checkpoint size.
func (s *Store) putRoom(window []byte) {
	if cap(window) > 2*s.checkpoint {
		return
	}
	s.rooms = append(s.rooms, window[:0])
	slices.SortFunc(s.rooms, func(a, b []byte) int { return cmp.Compare(cap(a), cap(b)) })
	if len(s.rooms) > 2 {
		s.rooms[0] = nil
		s.rooms = slices.Delete(s.rooms, 0, 1)
	}
}

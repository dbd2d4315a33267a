// Hazard pointers (Michael, 2004): each thread publishes, in a record only it writes, the
// addresses of the shared objects it is using now; a thread that wants to free or change one
// of them waits until no record names it. A reader pays one store with a full fence on its own
// cache line, nothing another reader touches; the waiting falls on the rare writer, and only
// for the readers of that one object. Used by Published<T> (a version readers read while a
// writer replaces it) and Gate (changes that a snapshot must exclude).
//
// fork(): the child inherits every record; a hazard that a thread of the parent held at the
// fork stays set in the child, whose writers would wait on it for ever. Fork with no operation
// on the objects in flight, as with a lock.
#pragma once

namespace packfs::hazard {

// One thread's hazard pointers: a few (a Vfs mounted inside a Vfs reads both tables at once).
struct Record;

// The calling thread's record (made on first use; given back when the thread ends).
Record& mine();
// Publishes `p` in the next free slot of `r` (a store with a full fence); returns the slot, or
// -1 when all are taken.
int hold(Record& r, const void* p) noexcept;
void drop(Record& r, int slot) noexcept;
// Returns once no thread's record holds `p`.
void wait_unused(const void* p) noexcept;

}  // namespace packfs::hazard

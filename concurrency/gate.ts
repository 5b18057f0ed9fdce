/** How many tasks may wait their turn; beyond it a task is refused at once with `refuse()`'s error. */
export interface QueueBound {
  maxWaiting: number
  refuse (): Error
}

/** A requester's claim on a bounded queue by its keys (account, address): from half the bound on, a key holding `max` waiting places is refused, keeping the rest for everyone else. */
export interface Share {
  keys: readonly string[]
  max: number
  refuse (): Error
}

/** A place in a gate's queue taken ahead of its task, so that the task is never refused once work depending on it has begun. */
export interface Reservation {
  /** Runs the task in the reserved place; dropped from the queue, rejected with `signal`'s reason, if it aborts first. */
  run<T> (task: () => PromiseLike<T>, signal?: AbortSignal): Promise<T>
  cancel (): void
}

export interface Gate {
  /** Runs `task` in turn, refused when the queue is full or beyond its `share`; a waiter whose `signal` aborts leaves, rejected with its reason. */
  <T>(task: () => PromiseLike<T>, bound?: QueueBound, signal?: AbortSignal, share?: Share): Promise<T>
  load (): { running: number, waiting: number }
  reserve (bound?: QueueBound, share?: Share): Reservation
  /** Sets the bound the gate applies when a call names none; undefined waits without bound. */
  limitWaiting (bound: QueueBound | undefined): void
}

const nothing = () => {}

interface Waiter {
  admit (): boolean
}

/** At most `limit` tasks at once; the others wait their turn, first come first served, up to `bound`. */
export function createGate (limit: number, bound?: QueueBound): Gate {
  let running = 0
  let reserved = 0
  let defaultBound = bound
  // A FIFO with a moving head, compacted when half is spent; an aborted waiter stays in it, passed over at its turn.
  let waiting: Array<Waiter | undefined> = []
  let head = 0
  let live = 0
  const queued = () => live + reserved
  const placesOf = new Map<string, number>()
  const hold = (keys: readonly string[], by: number) => {
    for (const key of keys) {
      const places = (placesOf.get(key) ?? 0) + by
      if (places === 0) placesOf.delete(key)
      else placesOf.set(key, places)
    }
  }
  const take = (share: Share | undefined) => {
    if (share === undefined) return nothing
    hold(share.keys, 1)
    let holds = true
    return () => {
      if (holds) hold(share.keys, -1)
      holds = false
    }
  }
  const release = () => {
    while (head < waiting.length) {
      const next = waiting[head]!
      waiting[head++] = undefined
      if (head > 1024 && head * 2 > waiting.length) {
        waiting = waiting.slice(head)
        head = 0
      }
      if (next.admit()) return
    }
    running--
  }
  function turn (signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let waits = true
      const abandon = () => {
        waits = false
        live--
        reject(signal!.reason)
      }
      live++
      waiting.push({
        admit: () => {
          if (!waits) return false
          waits = false
          live--
          signal?.removeEventListener('abort', abandon)
          resolve()
          return true
        }
      })
      signal?.addEventListener('abort', abandon, { once: true })
    })
  }
  async function enter<T> (task: () => PromiseLike<T>, signal?: AbortSignal, leave = nothing): Promise<T> {
    try {
      signal?.throwIfAborted()
      if (running < limit) running++
      else await turn(signal)
    } finally {
      leave()
    }
    try {
      return await task()
    } finally {
      release()
    }
  }
  // Reserved places count against the free slots too: an idle gate must not hand out a burst of places beyond its bound.
  const full = (bound: QueueBound | undefined) => bound !== undefined && running + queued() >= limit + bound.maxWaiting
  // From half the bound on, the waiting places left are kept for the keys that hold less than their share.
  const beyondShare = (bound: QueueBound | undefined, share: Share | undefined) => bound !== undefined && share !== undefined &&
    running + queued() - limit >= bound.maxWaiting / 2 && share.keys.some((key) => (placesOf.get(key) ?? 0) >= share.max)
  function run<T> (task: () => PromiseLike<T>, bound = defaultBound, signal?: AbortSignal, share?: Share): Promise<T> {
    if (full(bound)) return Promise.reject(bound!.refuse())
    if (running < limit) return enter(task, signal)
    if (beyondShare(bound, share)) return Promise.reject(share!.refuse())
    return enter(task, signal, take(share))
  }
  function reserve (bound = defaultBound, share?: Share): Reservation {
    if (full(bound)) throw bound!.refuse()
    if (beyondShare(bound, share)) throw share!.refuse()
    reserved++
    // The share's places are held until the task's turn comes, not only until it is run.
    const leave = take(share)
    let held = true
    const unreserve = () => {
      const was = held
      if (held) reserved--
      held = false
      return was
    }
    return {
      run: (task, signal) => {
        unreserve()
        return enter(task, signal, leave)
      },
      cancel: () => {
        if (unreserve()) leave()
      }
    }
  }
  return Object.assign(run, {
    load: () => ({ running, waiting: queued() }),
    reserve,
    limitWaiting: (bound: QueueBound | undefined) => { defaultBound = bound }
  })
}

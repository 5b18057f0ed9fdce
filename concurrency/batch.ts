import DataLoader from 'dataloader'

const MAX_BATCH = 100

/** One call per event-loop turn for all its `load`s; uncached, so each sees every write acknowledged before it asked. */
export function batched<K, V> (load: (keys: readonly K[]) => Promise<ArrayLike<V | Error>>): DataLoader<K, V> {
  return new DataLoader(load, { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (flush) => setImmediate(flush) })
}

const settled = () => undefined
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

// `run` shared by the callers of one key whose call has not started (they must not mutate the result): each still
// sees every write acknowledged before it asked, and a hot key keeps at most one call in the database.
export function coalesced<K, V> (run: (key: K) => Promise<V>, keyOf: (key: K) => string): (key: K) => Promise<V> {
  const waiting = new Map<string, Promise<V>>()
  const running = new Map<string, Promise<V>>()
  const start = (id: string, key: K) => {
    waiting.delete(id)
    const call = run(key)
    running.set(id, call)
    const ended = () => { if (running.get(id) === call) running.delete(id) }
    call.then(ended, ended)
    return call
  }
  return (key) => {
    const id = keyOf(key)
    let call = waiting.get(id)
    if (!call) {
      const before = running.get(id)
      call = (before ? before.then(settled, settled) : nextTurn()).then(() => start(id, key))
      waiting.set(id, call)
    }
    return call
  }
}

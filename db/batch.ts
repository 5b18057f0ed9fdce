import DataLoader from 'dataloader'

/** Most keys one batch carries; more wait for the next batch. */
const MAX_BATCH = 100

/**
 * A loader whose batch is every `load` of one turn of the event loop, sent when the turn ends
 * (setImmediate): on a busy server, one query for the requests read in that turn. Nothing is
 * cached, so each batch is a fresh query sent after all its callers asked: each sees every write
 * acknowledged before it asked. `load` answers per key, in order; an Error rejects that key only.
 */
export function batched<K, V> (load: (keys: readonly K[]) => Promise<ArrayLike<V | Error>>): DataLoader<K, V> {
  return new DataLoader(load, { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (flush) => setImmediate(flush) })
}

/**
 * `run`, with the calls of one event-loop turn that have the same `keyOf` sharing one call: a
 * busy server asks PostgreSQL for a popular page once per turn instead of once per request.
 * Callers must not mutate what they get.
 */
export function coalesced<K, V> (run: (key: K) => Promise<V>, keyOf: (key: K) => string): (key: K) => Promise<V> {
  const loader = batched<K, V>(async (keys) => {
    const calls = new Map<string, Promise<V | Error>>()
    return Promise.all(keys.map((key) => {
      const id = keyOf(key)
      let call = calls.get(id)
      if (!call) {
        call = run(key).catch((err: unknown) => err instanceof Error ? err : new Error(String(err)))
        calls.set(id, call)
      }
      return call
    }))
  })
  return (key) => loader.load(key)
}

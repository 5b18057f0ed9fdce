import DataLoader from 'dataloader'

/**
 * `run`, with the calls of one event-loop turn that have the same `keyOf` sharing one call: a
 * busy server asks PostgreSQL for a popular page once per turn instead of once per request.
 * Nothing outlives the turn's call, so every caller still sees the writes acknowledged before
 * it asked (the shared query is sent after all of them arrived). Callers must not mutate results.
 */
export function coalesced<K, V> (run: (key: K) => Promise<V>, keyOf: (key: K) => string): (key: K) => Promise<V> {
  const loader = new DataLoader<K, V>(async (keys) => {
    const calls = new Map<string, Promise<V | Error>>()
    return Promise.all(keys.map((key) => {
      const id = keyOf(key)
      let call = calls.get(id)
      if (!call) {
        // DataLoader rejects just the keys whose result is an Error.
        call = run(key).catch((err: unknown) => err instanceof Error ? err : new Error(String(err)))
        calls.set(id, call)
      }
      return call
    }))
  }, { cache: false, batchScheduleFn: (flush) => setImmediate(flush) })
  return (key) => loader.load(key)
}

import DataLoader from 'dataloader'

const MAX_BATCH = 100

/** One call per event-loop turn for all its `load`s; uncached, so each sees every write acknowledged before it asked. */
export function batched<K, V> (load: (keys: readonly K[]) => Promise<ArrayLike<V | Error>>): DataLoader<K, V> {
  return new DataLoader(load, { cache: false, maxBatchSize: MAX_BATCH, batchScheduleFn: (flush) => setImmediate(flush) })
}

/** `run`, one call per event-loop turn and `keyOf`, shared by its callers, who must not mutate the result. */
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

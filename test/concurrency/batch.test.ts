import t from 'tap'
import { coalesced } from '../../concurrency/batch.js'

/** A run whose calls are recorded and ended by hand, each answering what was "written" when it started. */
function controlled () {
  const calls: Array<{ key: string, seen: number, end: (fail?: Error) => void }> = []
  let written = 0
  const run = async (key: string) => {
    const seen = written
    await new Promise<void>((resolve, reject) => calls.push({ key, seen, end: (fail) => { fail ? reject(fail) : resolve() } }))
    return { key, seen }
  }
  return { calls, run, write: () => { written++ } }
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

t.test('the callers of one turn share one call per key', async (t) => {
  const { calls, run } = controlled()
  const shared = coalesced(run, (key: string) => key)
  const asks = [shared('a'), shared('a'), shared('b')]
  await turn()
  t.same(calls.map((call) => call.key), ['a', 'b'], 'one call per key')
  calls.forEach((call) => { call.end() })
  const [a, again, b] = await Promise.all(asks)
  t.equal(again, a, 'the same answer, not a copy')
  t.same(b, { key: 'b', seen: 0 })
})

t.test('callers arriving while their key runs share the next call, which starts after it and sees their writes', async (t) => {
  const { calls, run, write } = controlled()
  const shared = coalesced(run, (key: string) => key)
  const first = shared('a')
  await turn()
  t.equal(calls.length, 1)
  write()
  const late = [shared('a'), shared('a')]
  const other = shared('b')
  await turn()
  t.same(calls.map((call) => call.key), ['a', 'b'], 'a second call of the key waits for the first; another key does not')
  calls[0]!.end()
  t.same(await first, { key: 'a', seen: 0 })
  await turn()
  t.equal(calls.length, 3, 'the next call starts once the first ends')
  t.same(calls[2], { ...calls[2], key: 'a', seen: 1 }, 'and sees the write acknowledged before its callers asked')
  calls[2]!.end()
  const [x, y] = await Promise.all(late)
  t.equal(x, y, 'the late callers share it')
  calls[1]!.end()
  t.same(await other, { key: 'b', seen: 1 })
})

t.test('a failed call fails only its own callers, and the next call runs', async (t) => {
  const { calls, run } = controlled()
  const shared = coalesced(run, (key: string) => key)
  const failing = [shared('a'), shared('a')]
  await turn()
  const next = shared('a')
  calls[0]!.end(new Error('boom'))
  const results = await Promise.allSettled(failing)
  t.same(results.map((result) => result.status), ['rejected', 'rejected'])
  await turn()
  calls[1]!.end()
  t.same(await next, { key: 'a', seen: 0 }, 'the call after a failure answers')
  await turn()
  const fresh = shared('a')
  await turn()
  t.equal(calls.length, 3, 'with nothing running, a new caller starts on the next turn')
  calls[2]!.end()
  await fresh
})

import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { createGate } from '../../concurrency/gate.js'
import { freshDatabase, TEST_DATABASE_URL } from '../support/database.js'

t.test('the gate runs at most `limit` tasks at once, in arrival order', async (t) => {
  const run = createGate(3)
  let running = 0
  let most = 0
  const started: number[] = []
  await Promise.all(Array.from({ length: 20 }, (_, i) => run(async () => {
    started.push(i)
    most = Math.max(most, ++running)
    await sleep(2)
    running--
    return i
  })))
  t.equal(most, 3, 'never more than the limit')
  t.same(started, Array.from({ length: 20 }, (_, i) => i), 'first come, first served')
})

t.test('a failed task frees its place and its error reaches the caller', async (t) => {
  const run = createGate(1)
  await t.rejects(run(async () => { throw new Error('boom') }), /boom/)
  t.equal(await run(async () => 'next'), 'next', 'the next task runs')
  const results = await Promise.allSettled(Array.from({ length: 2000 }, (_, i) => run(async () => {
    if (i % 3 === 0) throw new Error(`task ${i}`)
    return i
  })))
  t.equal(results.filter((result) => result.status === 'fulfilled').length, 1333, 'every task ran, past the queue compaction')
})

t.test('through the gate, queries and transactions far beyond the pool size all complete', {
  skip: TEST_DATABASE_URL ? false : 'postgres.js only (TEST_DATABASE_URL)'
}, async (t) => {
  const client = await freshDatabase(t)
  const { sql } = await import('drizzle-orm')
  // 100 queries and 20 transactions at once on a pool of 10: a transaction holds its place in the
  // gate as it holds its connection, so they must neither deadlock nor fail UNSAFE_TRANSACTION.
  const queries = Array.from({ length: 100 }, (_, i) => client.db.execute(sql`select ${i}::int as n, pg_sleep(0.005)`))
  const transactions = Array.from({ length: 20 }, (_, i) => client.db.transaction(async (tx) => {
    const rows = await tx.execute(sql`select ${i}::int as n`)
    return (rows as unknown as Array<{ n: number }>)[0]?.n
  }))
  const answers = await Promise.all(queries)
  t.equal(answers.length, 100)
  t.same(await Promise.all(transactions), Array.from({ length: 20 }, (_, i) => i))
  const [{ active }] = await client.db.execute(sql`select count(*)::int as active from pg_stat_activity where datname = current_database() and backend_type = 'client backend'`) as unknown as [{ active: number }]
  t.ok(active <= 10, `at most the pool's 10 connections (${active})`)
})

/** A task that runs until released. */
function held () {
  let release!: () => void
  const done = new Promise<void>((resolve) => { release = resolve })
  return { task: () => done, release }
}

t.test('past its bound the gate refuses a task at once with the bound\'s error, and takes tasks again as the queue drains', async (t) => {
  const bound = { maxWaiting: 2, refuse: () => new Error('queue full') }
  const run = createGate(1, bound)
  const first = held()
  const tasks = [run(first.task), run(async () => 'a'), run(async () => 'b')]
  t.same(run.load(), { running: 1, waiting: 2 })
  await t.rejects(run(async () => 'c'), /queue full/, 'the third to wait is refused')
  t.same(run.load(), { running: 1, waiting: 2 }, 'a refused task takes no place')
  first.release()
  t.same(await Promise.all(tasks), [undefined, 'a', 'b'])
  t.equal(await run(async () => 'd'), 'd', 'accepted again once the queue drained')
})

t.test('a call may name its own bound; without any the gate waits without bound', async (t) => {
  const run = createGate(1)
  const first = held()
  const tasks = [run(first.task), ...Array.from({ length: 50 }, () => run(async () => 'ok'))]
  await t.rejects(run(async () => 'c', { maxWaiting: 10, refuse: () => new Error('own bound') }), /own bound/)
  run.limitWaiting({ maxWaiting: 0, refuse: () => new Error('set later') })
  await t.rejects(run(async () => 'c'), /set later/)
  run.limitWaiting(undefined)
  tasks.push(run(async () => 'unbounded again'))
  first.release()
  t.equal((await Promise.all(tasks)).length, 52)
})

t.test('a reservation counts as waiting, runs its task even when the queue is full, and gives its place back when cancelled', async (t) => {
  const bound = { maxWaiting: 1, refuse: () => new Error('queue full') }
  const run = createGate(1, bound)
  const first = held()
  const running = run(first.task)
  const slot = run.reserve()
  t.same(run.load(), { running: 1, waiting: 1 })
  t.throws(() => run.reserve(), /queue full/, 'no second place')
  await t.rejects(run(async () => 'x'), /queue full/, 'nor a task')
  const reserved = slot.run(async () => 'reserved')
  slot.cancel()
  t.same(run.load(), { running: 1, waiting: 1 }, 'cancel after run changes nothing')
  first.release()
  await running
  t.equal(await reserved, 'reserved')
  const unused = run.reserve()
  unused.cancel()
  unused.cancel()
  t.same(run.load(), { running: 0, waiting: 0 }, 'a cancelled place is given back once')
})

t.test('a waiting task whose signal aborts leaves the queue at once, rejected with the reason, and is never run', async (t) => {
  const bound = { maxWaiting: 2, refuse: () => new Error('queue full') }
  const run = createGate(1, bound)
  const first = held()
  const running = run(first.task)
  const ran: string[] = []
  const gone = new AbortController()
  const abandoned = run(async () => { ran.push('abandoned') }, undefined, gone.signal)
  const kept = run(async () => { ran.push('kept') })
  t.same(run.load(), { running: 1, waiting: 2 })
  await t.rejects(run(async () => 'x'), /queue full/, 'the queue is full')
  gone.abort(new Error('client gone'))
  await t.rejects(abandoned, /client gone/, 'rejected with the signal\'s reason')
  t.same(run.load(), { running: 1, waiting: 1 }, 'its place is free before its turn would have come')
  const late = run(async () => { ran.push('late') })
  first.release()
  await Promise.all([running, kept, late])
  t.same(ran, ['kept', 'late'], 'passed over when its turn came; the others ran in order')
  t.same(run.load(), { running: 0, waiting: 0 })
  const already = new AbortController()
  already.abort(new Error('gone before'))
  await t.rejects(run(async () => { ran.push('never') }, undefined, already.signal), /gone before/, 'an aborted signal is refused before it takes a place')
  const reserved = run.reserve()
  await t.rejects(reserved.run(async () => { ran.push('never') }, already.signal), /gone before/, 'a reservation run with it too')
  t.same(run.load(), { running: 0, waiting: 0 })
  t.same(ran, ['kept', 'late'])
  const after = held()
  const busy = run(after.task)
  const signal = new AbortController()
  const admitted = run(async () => 'admitted', undefined, signal.signal)
  after.release()
  t.equal(await admitted, 'admitted', 'a task whose turn came runs')
  signal.abort(new Error('too late'))
  await busy
  t.same(run.load(), { running: 0, waiting: 0 }, 'an abort after its turn changes nothing')
})

t.test('an idle gate hands out no more places than its slots and its bound, however many are reserved at once', async (t) => {
  const bound = { maxWaiting: 2, refuse: () => new Error('queue full') }
  const run = createGate(1, bound)
  const places = [run.reserve(), run.reserve(), run.reserve()]
  t.throws(() => run.reserve(), /queue full/, 'one for the free slot and two to wait: the fourth is refused')
  await t.rejects(run(async () => 'x'), /queue full/, 'and so is a task')
  const results = await Promise.all(places.map((place, i) => place.run(async () => i)))
  t.same(results, [0, 1, 2], 'each reserved place runs its task')
  t.same(run.load(), { running: 0, waiting: 0 })
})

t.test('past half its bound, a key that holds its share of the waiting places is refused with the share\'s error, and other keys still get in', async (t) => {
  const bound = { maxWaiting: 4, refuse: () => new Error('queue full') }
  const run = createGate(1, bound)
  const share = (...keys: string[]) => ({ keys, max: 1, refuse: () => new Error(`${keys.join(' and ')}: too many`) })
  const first = held()
  const running = run(first.task, undefined, undefined, share('a'))
  t.same(run.load(), { running: 1, waiting: 0 }, 'a task that runs at once holds no waiting place')
  const waiting = [run(async () => 'a1', undefined, undefined, share('a')), run(async () => 'a2', undefined, undefined, share('a', 'x'))]
  t.same(run.load(), { running: 1, waiting: 2 }, 'below half the bound a key may hold more than its share')
  await t.rejects(run(async () => 'a3', undefined, undefined, share('a')), /^a: too many$/, 'from half on, it may not')
  t.throws(() => run.reserve(undefined, share('b', 'x')), /b and x: too many/, 'a reservation neither, nor any request sharing one of its keys')
  t.same(run.load(), { running: 1, waiting: 2 }, 'a refused task takes no place')
  const other = run.reserve(undefined, share('b'))
  waiting.push(run(async () => 'c', undefined, undefined, share('c')))
  t.same(run.load(), { running: 1, waiting: 4 }, 'other keys take the other half')
  await t.rejects(run(async () => 'd', undefined, undefined, share('d')), /queue full/, 'and the bound still holds')
  other.cancel()
  await t.rejects(run(async () => 'a4', undefined, undefined, share('a')), /a: too many/, 'a cancelled reservation gives its key\'s place back, not another key\'s')
  waiting.push(run(async () => 'b', undefined, undefined, share('b')))
  first.release()
  await running
  t.same(await Promise.all(waiting), ['a1', 'a2', 'c', 'b'])
  const again = held()
  const busy = run(again.task)
  const gone = new AbortController()
  const left = run(async () => 'a', undefined, gone.signal, share('a'))
  const reserved = run.reserve(undefined, share('r'))
  gone.abort(new Error('client gone'))
  await t.rejects(left, /client gone/)
  const kept = [run(async () => 'y', undefined, undefined, share('y')), run(async () => 'a again', undefined, undefined, share('a'))]
  t.same(run.load(), { running: 1, waiting: 3 }, 'a task that left the queue gave its key\'s place back')
  kept.push(reserved.run(async () => 'r'))
  again.release()
  t.same(await Promise.all([busy, ...kept]), [undefined, 'y', 'a again', 'r'])
  // At half the bound again: keys whose tasks had their turn hold nothing any more.
  const third = held()
  const last = [run(third.task), run(async () => 'p', undefined, undefined, share('p')), run(async () => 'q', undefined, undefined, share('q'))]
  last.push(run(async () => 'a', undefined, undefined, share('a')), run(async () => 'r', undefined, undefined, share('r')))
  third.release()
  t.same(await Promise.all(last), [undefined, 'p', 'q', 'a', 'r'])
  t.same(run.load(), { running: 0, waiting: 0 })
})

t.test('without a bound a share refuses nothing: there is no queue to keep free', async (t) => {
  const run = createGate(1)
  const first = held()
  const share = { keys: ['a'], max: 1, refuse: () => new Error('too many') }
  const tasks = [run(first.task), ...Array.from({ length: 10 }, (_, i) => run(async () => i, undefined, undefined, share))]
  t.doesNotThrow(() => run.reserve(undefined, share).cancel())
  first.release()
  t.equal((await Promise.all(tasks)).length, 11)
})

import t from 'tap'
import { API_PREFIX } from '../../app.js'
import { withoutSecrets } from '../../http/log-redaction.js'
import resourcePlugin from '../../routes/resources/index.js'
import { build, captureLogs, newAccount } from '../support/app.js'
import { listening, openStream } from '../support/event-stream.js'
import { TaskFields } from '../support/tasks.js'

const TASKS = `${API_PREFIX}/tasks`

t.test('a stream ticket read from the logs opens nothing: no log line holds it, the request line shows it redacted', async (t) => {
  const logs = captureLogs()
  const app = await build(t, {}, { logger: logs.logger })
  await app.register(resourcePlugin, { prefix: API_PREFIX, name: 'tasks', fields: TaskFields, owner: true })
  const base = await listening(app)
  const { session } = await newAccount(app)
  const ticket = async () => (await app.inject({ method: 'POST', url: `${TASKS}/events/tickets`, headers: session.headers })).json().ticket as string

  const used = await ticket()
  t.equal((await openStream(t, `${base}${TASKS}/events?priority=3&ticket=${encodeURIComponent(used)}`)).status, 200)
  // Spelled as the query parser still reads it, and refused.
  const refused = await ticket()
  const both = await app.inject({ method: 'GET', url: `${TASKS}/events?%74icket=${encodeURIComponent(refused)}`, headers: session.headers })
  t.equal(both.statusCode, 422, 'a ticket with a header is refused')

  const text = JSON.stringify(logs.lines)
  for (const secret of [used, refused]) t.notOk(text.includes(secret), 'the ticket is nowhere in the log')
  const urls = logs.lines.flatMap((line) => typeof (line.req as { url?: string } | undefined)?.url === 'string' ? [(line.req as { url: string }).url] : [])
  t.ok(urls.includes(`${TASKS}/events?priority=3&ticket=[redacted]`), 'the request line keeps the other parameters and the ticket\'s place')
  t.ok(urls.includes(`${TASKS}/events?%74icket=[redacted]`))
})

t.test('withoutSecrets redacts the ticket wherever the query has it, and nothing else', async (t) => {
  const cases: Array<[string, string]> = [
    ['/a/events?ticket=abc', '/a/events?ticket=[redacted]'],
    ['/a/events?x=1&ticket=abc&y=2#f', '/a/events?x=1&ticket=[redacted]&y=2#f'],
    ['/a/events?ticket=a&ticket=b', '/a/events?ticket=[redacted]&ticket=[redacted]'],
    ['/a/events?tick%65t=abc', '/a/events?tick%65t=[redacted]'],
    ['/a/events?ticket', '/a/events?ticket=[redacted]'],
    ['/a/events?ticket[in]=x&tickets=y&%E0=z', '/a/events?ticket[in]=x&tickets=y&%E0=z'],
    ['/a/events', '/a/events']
  ]
  for (const [url, logged] of cases) t.equal(withoutSecrets(url), logged, url)
})

t.test('a host\'s own logger redacts a ticket with the serializer plinth exports', async (t) => {
  const { requestLogSerializer } = await import('../../index.js')
  const { default: Fastify } = await import('fastify')
  const logs = captureLogs()
  const host = Fastify({ logger: { ...logs.logger, serializers: { req: requestLogSerializer } } })
  t.teardown(() => host.close())
  host.get('/feed', async () => 'ok')
  t.equal((await host.inject({ url: '/feed?ticket=secret-ticket-value&x=1' })).statusCode, 200)
  t.notOk(JSON.stringify(logs.lines).includes('secret-ticket-value'), 'the ticket is nowhere in the host\'s log')
  t.ok(logs.lines.some((line) => (line.req as { url?: string } | undefined)?.url === '/feed?ticket=[redacted]&x=1'), 'its request line shows it redacted')
})

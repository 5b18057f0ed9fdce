import { pino } from 'pino'
import t from 'tap'
import { redactUrl, redactUrls, redactUrlsIn } from '../../db/redact-url.js'

t.test('a URL keeps its user and loses its password, however malformed', async (t) => {
  const cases: Array<[string, string]> = [
    ['postgres://admin:s3cret@db.example.com:5432/app', 'postgres://admin:***@db.example.com:5432/app'],
    ['postgres://admin:s3@c/r#et@db.example.com/app', 'postgres://admin:***@db.example.com/app'],
    ['postgres://admin:s3 cret@db.example.com/app', 'postgres://admin:***@db.example.com/app'],
    ['redis://:s3cret@cache', 'redis://:***@cache'],
    ['postgres://plinth@127.0.0.1/plinth', 'postgres://plinth@127.0.0.1/plinth'],
    ['pglite://./data/pglite', 'pglite://./data/pglite'],
    ['plinth <no-reply@localhost>', 'plinth <no-reply@localhost>']
  ]
  for (const [url, shown] of cases) t.equal(redactUrl(url), shown, url)
})

t.test('every URL in a text loses its password', async (t) => {
  t.equal(
    redactUrls('Invalid URL "postgres://a:s3cret@h:x/db", then smtps://mail:s3cret@smtp.example.com and https://example.com/@user'),
    'Invalid URL "postgres://a:***@h:x/db", then smtps://mail:***@smtp.example.com and https://example.com/@user'
  )
})

t.test('a logged error keeps no password of a URL, in its message, stack or any property', async (t) => {
  const error = Object.assign(new TypeError('Invalid URL: postgres://admin:s3cret@h:x/db'), { code: 'ERR_INVALID_URL', input: 'postgres://admin:s3cret@h:x/db' })
  const logged = redactUrlsIn(pino.stdSerializers.err(error)) as Record<string, unknown>
  t.notMatch(JSON.stringify(logged), /s3cret/)
  t.match(logged, { type: 'TypeError', code: 'ERR_INVALID_URL', input: 'postgres://admin:***@h:x/db', message: 'Invalid URL: postgres://admin:***@h:x/db' })
  t.same(redactUrlsIn([1, null, { at: 'x://u:p@h' }]), [1, null, { at: 'x://u:***@h' }])
})

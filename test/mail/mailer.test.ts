import { pino } from 'pino'
import t, { type Test } from 'tap'
import { createMailer } from '../../mail/mailer.js'
import { smtpSender, type MailMessage, type SendMail } from '../../mail/senders.js'
import { defaultTemplates, render } from '../../mail/templates.js'
import { startSmtp, unusedSmtpUrl } from '../support/smtp.js'

const FROM = 'no-reply@plinth.test'
const TO = 'ada@example.com'
const values = { link: 'https://app.example.com/reset-password?token=tok_123&lang=en', email: TO, expires: '30 minutes' }

/** A pino logger at debug level keeping its entries, so a test sees everything the mailer writes. */
function capture () {
  const lines: Array<Record<string, any>> = []
  const log = pino({ level: 'debug' }, { write: (line: string) => { lines.push(JSON.parse(line)) } })
  return { lines, log }
}

/** A sender on `url` closed when the test ends; 2 s per connection step. */
function sender (t: Test, url: string) {
  const smtp = smtpSender(url, 2000)
  t.teardown(() => smtp.close())
  return smtp
}

const mailerOn = (sendMail: SendMail | undefined, timeoutMs = 2000) =>
  createMailer({ sendMail, from: FROM, templates: defaultTemplates, timeoutMs })

const LEVEL = { debug: 20, info: 30, error: 50 }

t.test('a message sent over SMTP arrives as rendered', async (t) => {
  const smtp = await startSmtp(t)
  const mailer = mailerOn(sender(t, smtp.url).sendMail)
  const { lines, log } = capture()
  mailer.send(log, 'reset-password', TO, values)
  const mail = await smtp.next(TO)
  await mailer.drain()

  const expected = render(defaultTemplates['reset-password'], values)
  t.equal(mail.from, FROM)
  t.same(mail.to, [TO])
  t.equal(mail.subject, 'Reset your password')
  t.equal(mail.text, expected.text)
  t.equal(mail.html, expected.html)
  t.match(mail.html, /^<!doctype html>\n<html><body/, 'the html part is an HTML page')
  t.match(mail.html, 'href="https://app.example.com/reset-password?token=tok_123&amp;lang=en"', 'with the link escaped in its attribute')
  t.same(mail.links, [values.link], 'the text part has the link as it is')
  t.same(lines.map(({ level, mail, msg }) => ({ level, mail, msg })), [{ level: LEVEL.debug, mail: 'reset-password', msg: 'mail sent' }])
  t.equal(smtp.received.length, 1)
})

t.test('each message goes to its own recipient', async (t) => {
  const smtp = await startSmtp(t)
  const mailer = mailerOn(sender(t, smtp.url).sendMail)
  const { log } = capture()
  mailer.send(log, 'verify-email', 'one@example.com', { ...values, email: 'one@example.com', link: 'https://app.example.com/verify?token=1' })
  mailer.send(log, 'verify-email', 'two@example.com', { ...values, email: 'two@example.com', link: 'https://app.example.com/verify?token=2' })
  const two = await smtp.next('two@example.com')
  const one = await smtp.next('one@example.com')
  await mailer.drain()
  t.equal(one.subject, 'Confirm your email address')
  t.same(one.links, ['https://app.example.com/verify?token=1'])
  t.same(two.links, ['https://app.example.com/verify?token=2'])
  t.match(two.text, 'Please confirm that two@example.com is your address')
})

t.test('SMTP with credentials in the URL', async (t) => {
  const auth = { user: 'mailer', pass: 'p@ss word' }

  t.test('the right credentials are accepted', async (t) => {
    const smtp = await startSmtp(t, { auth })
    t.match(smtp.url, /^smtp:\/\/mailer:p%40ss%20word@127\.0\.0\.1:\d+$/)
    const mailer = mailerOn(sender(t, smtp.url).sendMail)
    const { lines, log } = capture()
    mailer.send(log, 'verify-email', TO, values)
    const mail = await smtp.next(TO)
    await mailer.drain()
    t.equal(mail.subject, 'Confirm your email address')
    t.same(lines.map(({ level }) => level), [LEVEL.debug])
  })

  t.test('wrong credentials are logged as an error', async (t) => {
    const smtp = await startSmtp(t, { auth })
    const mailer = mailerOn(sender(t, smtp.url.replace('p%40ss%20word', 'not-the-password')).sendMail)
    const { lines, log } = capture()
    mailer.send(log, 'verify-email', TO, values)
    await mailer.drain()
    t.equal(lines.length, 1)
    t.match(lines[0], { level: LEVEL.error, mail: 'verify-email', msg: 'mail could not be sent', err: { code: 'EAUTH' } })
    const logged = JSON.stringify(lines)
    t.notOk(logged.includes('not-the-password'), 'the password is not in the log')
    t.notOk(logged.includes(Buffer.from('\0mailer\0not-the-password').toString('base64')), 'nor the AUTH PLAIN token')
    t.same(smtp.received, [], 'nothing was delivered')
  })

  t.test('no credentials at all are refused too', async (t) => {
    const smtp = await startSmtp(t, { auth })
    const mailer = mailerOn(sender(t, smtp.url.replace(/\/\/[^@]+@/, '//')).sendMail)
    const { lines, log } = capture()
    mailer.send(log, 'verify-email', TO, values)
    await mailer.drain()
    t.match(lines, [{ level: LEVEL.error, mail: 'verify-email', msg: 'mail could not be sent', err: { message: /530/ } }])
    t.equal(lines.length, 1)
    t.same(smtp.received, [])
  })
})

t.test('without sendMail the message is written to the log, once, at info', async (t) => {
  const mailer = mailerOn(undefined)
  const { lines, log } = capture()
  mailer.send(log, 'reset-password', TO, values)
  await mailer.drain()
  t.equal(lines.length, 1, 'one line and nothing else')
  t.match(lines[0], {
    level: LEVEL.info,
    mail: 'reset-password',
    to: TO,
    subject: 'Reset your password',
    link: values.link,
    msg: /no mail server is configured/
  })
})

t.test('a sendMail that rejects is one error entry, and send never throws', async (t) => {
  const seen: MailMessage[] = []
  const mailer = mailerOn(async (message) => {
    seen.push(message)
    throw new Error('mailbox unavailable')
  })
  const { lines, log } = capture()
  t.doesNotThrow(() => mailer.send(log, 'verify-email', TO, values))
  await mailer.drain()
  t.equal(lines.length, 1)
  t.match(lines[0], { level: LEVEL.error, mail: 'verify-email', msg: 'mail could not be sent', err: { type: 'Error', message: 'mailbox unavailable' } })
  t.match(seen, [{ to: TO, from: FROM, kind: 'verify-email', link: values.link, subject: 'Confirm your email address' }], 'the sender got the message rendered')
})

t.test('a sendMail that throws synchronously is logged the same way', async (t) => {
  const mailer = mailerOn(() => { throw new Error('bad transport') })
  const { lines, log } = capture()
  t.doesNotThrow(() => mailer.send(log, 'reset-password', TO, values))
  await mailer.drain()
  t.match(lines, [{ level: LEVEL.error, mail: 'reset-password', err: { message: 'bad transport' } }])
  t.equal(lines.length, 1)
})

t.test('a sendMail that never settles fails at the timeout', async (t) => {
  const mailer = mailerOn(() => new Promise(() => {}), 200)
  const { lines, log } = capture()
  mailer.send(log, 'reset-password', TO, values)
  await mailer.drain()
  t.equal(lines.length, 1)
  t.match(lines[0], { level: LEVEL.error, mail: 'reset-password', err: { message: /did not take the message within 200 ms/ } })
})

t.test('drain waits for every pending delivery', async (t) => {
  const settle: Array<() => void> = []
  const mailer = mailerOn(() => new Promise<void>((resolve) => { settle.push(resolve) }))
  const { lines, log } = capture()
  await mailer.drain()
  t.pass('nothing pending: drain resolves')

  mailer.send(log, 'reset-password', 'one@example.com', values)
  mailer.send(log, 'verify-email', 'two@example.com', values)
  let drained = false
  const draining = mailer.drain().then(() => { drained = true })
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(settle.length, 2, 'both messages were handed to the sender')
  t.notOk(drained, 'drain waits while both are pending')

  settle[0]!()
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(drained, 'and while one still is')
  t.equal(lines.length, 1)

  settle[1]!()
  await draining
  t.same(lines.map(({ mail, msg }) => ({ mail, msg })), [
    { mail: 'reset-password', msg: 'mail sent' },
    { mail: 'verify-email', msg: 'mail sent' }
  ])
  await mailer.drain()
  t.pass('drained again with nothing left')
})

t.test('an unreachable SMTP server is logged, not thrown', async (t) => {
  const mailer = mailerOn(sender(t, await unusedSmtpUrl()).sendMail)
  const { lines, log } = capture()
  t.doesNotThrow(() => mailer.send(log, 'verify-email', TO, values))
  await mailer.drain()
  t.equal(lines.length, 1)
  t.match(lines[0], { level: LEVEL.error, mail: 'verify-email', msg: 'mail could not be sent', err: { message: /ECONNREFUSED/ } })
})

t.test('the test server reports a message that never comes', async (t) => {
  const smtp = await startSmtp(t)
  await t.rejects(smtp.next('nobody@example.com', 50), /no mail to nobody@example.com arrived within 50 ms/)
})

t.test('later runs its work after the current turn; a failure is logged, and drain waits for it', async (t) => {
  const mailer = mailerOn(undefined)
  const { lines, log } = capture()
  const steps: string[] = []
  mailer.later(log, async () => { steps.push('work') })
  mailer.later(log, async () => { throw new Error('the database is gone') })
  steps.push('answer')
  await Promise.resolve()
  t.same(steps, ['answer'], 'not even after the current microtasks')
  await mailer.drain()
  t.same(steps, ['answer', 'work'])
  t.same(lines.map(({ level, msg, err }) => ({ level, msg, message: err?.message })), [
    { level: LEVEL.error, msg: 'preparing a mail failed', message: 'the database is gone' }
  ])
})

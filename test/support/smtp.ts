// A real SMTP server inside the test process, for the tests of the mail module: what a sender
// delivers is parsed back with mailparser so a test reads the message as a mail client would.
import { createServer, type AddressInfo } from 'node:net'
import { simpleParser } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import type { Test } from 'tap'

/** One message as the server received it: `to` holds the envelope's recipients, `links` the http(s) URLs of the text part. */
export interface ReceivedMail {
  from: string
  to: string[]
  subject: string
  text: string
  html: string
  links: string[]
}

export interface SmtpOptions {
  /** Only these credentials are accepted; without them the server takes mail from anyone. */
  auth?: { user: string, pass: string }
}

export interface TestSmtp {
  /** `smtp://127.0.0.1:PORT`, with the credentials in it when the server asks for some. */
  url: string
  /** Every message received so far, in order of arrival. */
  received: ReceivedMail[]
  /** The next message not yet taken whose recipients include `to` (any when omitted), waiting up to `timeoutMs`. */
  next (to?: string, timeoutMs?: number): Promise<ReceivedMail>
}

interface Waiter { to: string | undefined, timer?: NodeJS.Timeout, take (mail: ReceivedMail): void }

// Trailing punctuation ends a sentence, not a URL.
const linksOf = (text: string) => (text.match(/https?:\/\/[^\s<>"']+/g) ?? []).map((link) => link.replace(/[.,;:!?)]+$/, ''))
const addressed = (mail: ReceivedMail, to: string | undefined) =>
  to === undefined || mail.to.some((recipient) => recipient.toLowerCase() === to.toLowerCase())

/** Listens on 127.0.0.1 without TLS and stops when the test ends. */
export async function startSmtp (t: Test, { auth }: SmtpOptions = {}): Promise<TestSmtp> {
  const received: ReceivedMail[] = []
  const untaken: ReceivedMail[] = []
  const waiters: Waiter[] = []

  function arrived (mail: ReceivedMail) {
    received.push(mail)
    const waiter = waiters.find((w) => addressed(mail, w.to))
    if (waiter) waiter.take(mail)
    else untaken.push(mail)
  }

  const server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: !auth,
    allowInsecureAuth: true,
    logger: false,
    // Teardown should not wait the default 30 s for a client that left a connection open.
    closeTimeout: 500,
    onAuth (credentials, _session, callback) {
      if (auth && credentials.username === auth.user && credentials.password === auth.pass) return callback(null, { user: auth.user })
      callback(new Error('Invalid username or password'))
    },
    onData (stream, session, callback) {
      simpleParser(stream).then((parsed) => {
        const text = parsed.text ?? ''
        arrived({
          from: parsed.from?.value[0]?.address ?? '',
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          subject: parsed.subject ?? '',
          text,
          html: typeof parsed.html === 'string' ? parsed.html : '',
          links: linksOf(text)
        })
        callback()
      }, (err: Error) => callback(err))
    }
  })

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.server.off('error', reject)
      resolve()
    })
  })
  t.teardown(() => new Promise<void>((resolve) => {
    // A wait nobody awaited any more is dropped, not failed after its test ended.
    for (const waiter of waiters.splice(0)) clearTimeout(waiter.timer)
    server.close(() => resolve())
  }))

  const { port } = server.server.address() as AddressInfo
  const credentials = auth ? `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@` : ''

  function next (to?: string, timeoutMs = 10_000): Promise<ReceivedMail> {
    const index = untaken.findIndex((mail) => addressed(mail, to))
    if (index !== -1) return Promise.resolve(untaken.splice(index, 1)[0]!)
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        to,
        take (mail) {
          clearTimeout(waiter.timer)
          waiters.splice(waiters.indexOf(waiter), 1)
          resolve(mail)
        }
      }
      waiter.timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1)
        reject(new Error(`no mail ${to === undefined ? '' : `to ${to} `}arrived within ${timeoutMs} ms ` +
          `(${received.length} received in all, ${untaken.length} waiting for other recipients)`))
      }, timeoutMs)
      waiters.push(waiter)
    })
  }

  return { url: `smtp://${credentials}127.0.0.1:${port}`, received, next }
}

/** An `smtp://` URL of a local port nobody listens on, for the tests of an unreachable server. */
export async function unusedSmtpUrl (): Promise<string> {
  const probe = createServer()
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return `smtp://127.0.0.1:${port}`
}

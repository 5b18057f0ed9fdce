import type { FastifyBaseLogger } from 'fastify'
import type { MailMessage, SendMail } from './senders.js'
import { render, type MailTemplate, type TemplateName, type TemplateValues } from './templates.js'

export interface MailerOptions {
  /** Without one, each message is written to the log instead (a development default). */
  sendMail?: SendMail
  from: string
  templates: Record<TemplateName, MailTemplate>
  timeoutMs: number
  onDelivered?: (sent: boolean) => void
}

function within<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the mail server did not take the message within ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** Sends account mail in the background: a request never waits for the mail server, and a failure is logged, never answered. */
export function createMailer ({ sendMail, from, templates, timeoutMs, onDelivered = () => {} }: MailerOptions) {
  const pending = new Set<Promise<void>>()

  function deliver (log: FastifyBaseLogger, message: MailMessage): Promise<void> {
    if (!sendMail) {
      log.info({ mail: message.kind, to: message.to, subject: message.subject, link: message.link }, 'mail written to the log, not sent: no mail server is configured')
      return Promise.resolve()
    }
    return within(Promise.resolve().then(() => sendMail(message)), timeoutMs).then(
      () => {
        onDelivered(true)
        log.debug({ mail: message.kind }, 'mail sent')
      },
      (err: unknown) => {
        onDelivered(false)
        log.error({ err, mail: message.kind }, 'mail could not be sent')
      }
    )
  }

  function track (work: Promise<void>) {
    const tracked = work.finally(() => pending.delete(tracked))
    pending.add(tracked)
  }

  return {
    send (log: FastifyBaseLogger, kind: TemplateName, to: string, values: TemplateValues): void {
      track(deliver(log, { to, from, kind, link: values.link, ...render(templates[kind], values) }))
    },
    /** Runs `work` after the current answer is on its way; a failure is logged, and closing waits for it. */
    later (log: FastifyBaseLogger, work: () => Promise<void>): void {
      track(new Promise<void>((resolve) => setImmediate(resolve)).then(work)
        .catch((err: unknown) => log.error({ err }, 'preparing a mail failed')))
    },
    /** Waits for the messages still on their way (each gives up after the timeout) and the work before them. */
    async drain (): Promise<void> {
      await Promise.all(pending)
    }
  }
}

export type Mailer = ReturnType<typeof createMailer>

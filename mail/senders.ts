import { createTransport } from 'nodemailer'
import type { TemplateName } from './templates.js'

/** One message as accounts send it; `kind` and `link` are there for senders that template on their own. */
export interface MailMessage {
  to: string
  from: string
  subject: string
  text: string
  html: string
  kind: TemplateName
  link: string
}

/** Sends one message; the promise settles when the mail server took it or refused it. */
export type SendMail = (message: MailMessage) => Promise<unknown>

export interface SmtpSender {
  sendMail: SendMail
  close (): void
}

/** nodemailer on an `smtp://` or `smtps://` URL; each connection step gives up after `timeoutMs`, so a dead server fails soon. */
export function smtpSender (url: string, timeoutMs: number): SmtpSender {
  const transport = createTransport({ url, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs })
  return {
    sendMail: ({ to, from, subject, text, html }) => transport.sendMail({ to, from, subject, text, html }),
    close: () => transport.close()
  }
}

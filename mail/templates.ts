import { readFileSync } from 'node:fs'
import { join } from 'node:path'

export const TEMPLATE_NAMES = ['reset-password', 'verify-email', 'confirm-email', 'email-change-notice'] as const
export type TemplateName = typeof TEMPLATE_NAMES[number]

/** One message's subject, text part and HTML part, with `{{name}}` placeholders. */
export interface MailTemplate { subject: string, text: string, html: string }

/** `expires` reads like "30 minutes"; `new_email` is set only in the notice of an email change. */
export interface TemplateValues { link: string, email: string, expires: string, new_email?: string }

const page = (paragraphs: string[]) =>
  `<!doctype html>\n<html><body style="font-family: sans-serif; line-height: 1.5">\n${paragraphs.map((p) => `<p>${p}</p>`).join('\n')}\n</body></html>\n`

export const defaultTemplates: Record<TemplateName, MailTemplate> = {
  'reset-password': {
    subject: 'Reset your password',
    text: 'Someone asked to reset the password of the account {{email}}.\n\n' +
      'To choose a new password, open this link within {{expires}}:\n{{link}}\n\n' +
      'If it was not you, ignore this message: your password stays as it is.\n',
    html: page([
      'Someone asked to reset the password of the account {{email}}.',
      'To choose a new password, open <a href="{{link}}">this link</a> within {{expires}}.',
      'If it was not you, ignore this message: your password stays as it is.'
    ])
  },
  'verify-email': {
    subject: 'Confirm your email address',
    text: 'Please confirm that {{email}} is your address by opening this link within {{expires}}:\n{{link}}\n\n' +
      'If you did not ask for an account, ignore this message.\n',
    html: page([
      'Please confirm that {{email}} is your address by opening <a href="{{link}}">this link</a> within {{expires}}.',
      'If you did not ask for an account, ignore this message.'
    ])
  },
  'confirm-email': {
    subject: 'Confirm your new email address',
    text: 'Someone asked to make {{email}} the email address of their account.\n\n' +
      'To confirm that it is yours, open this link within {{expires}}:\n{{link}}\n\n' +
      'Until then the account keeps its current address. If it was not you, ignore this message.\n',
    html: page([
      'Someone asked to make {{email}} the email address of their account.',
      'To confirm that it is yours, open <a href="{{link}}">this link</a> within {{expires}}.',
      'Until then the account keeps its current address. If it was not you, ignore this message.'
    ])
  },
  'email-change-notice': {
    subject: 'Your email address is being changed',
    text: 'Someone asked to change the email address of the account {{email}} to {{new_email}}. ' +
      'It changes once a link mailed to {{new_email}} is followed, and then every session of the account ends.\n\n' +
      'If it was not you, someone knows your password: reset it now, which also cancels the change.\n',
    html: page([
      'Someone asked to change the email address of the account {{email}} to {{new_email}}. ' +
        'It changes once a link mailed to {{new_email}} is followed, and then every session of the account ends.',
      'If it was not you, someone knows your password: reset it now, which also cancels the change.'
    ])
  }
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]!)

/** Fills the placeholders; the HTML part gets its values escaped. An unknown placeholder is left as it is. */
export function render (template: MailTemplate, values: TemplateValues): MailTemplate {
  const fill = (text: string, escape: (value: string) => string) =>
    text.replace(/\{\{\s*(\w+)\s*\}\}/g, (whole, name: string) => {
      const value = Object.hasOwn(values, name) ? values[name as keyof TemplateValues] : undefined
      return value === undefined ? whole : escape(value)
    })
  const plain = (value: string) => value
  return { subject: fill(template.subject, plain), text: fill(template.text, plain), html: fill(template.html, escapeHtml) }
}

const PARTS = { subject: 'subject.txt', text: 'txt', html: 'html' } as const

/** `<name>.subject.txt`, `<name>.txt` and `<name>.html` per message; a missing file keeps the default part, an unreadable one throws. */
export function readTemplatesDir (dir: string): Partial<Record<TemplateName, Partial<MailTemplate>>> {
  const read = (file: string) => {
    try {
      return readFileSync(join(dir, file), 'utf8')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw err
    }
  }
  return Object.fromEntries(TEMPLATE_NAMES.map((name) => [name, Object.fromEntries(
    Object.entries(PARTS).flatMap(([part, extension]) => {
      const text = read(`${name}.${extension}`)
      return text === undefined ? [] : [[part, part === 'subject' ? text.trim() : text]]
    })
  )]))
}

export function withOverrides (overrides: Partial<Record<TemplateName, Partial<MailTemplate>>> = {}): Record<TemplateName, MailTemplate> {
  return Object.fromEntries(TEMPLATE_NAMES.map((name) => [name, { ...defaultTemplates[name], ...overrides[name] }])) as Record<TemplateName, MailTemplate>
}

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { defaultTemplates, readTemplatesDir, render, withOverrides, type MailTemplate } from '../../mail/templates.js'

const values = { link: 'https://app.example.com/reset?token=abc', email: 'ada@example.com', expires: '30 minutes', new_email: 'ada@new.example.com' }

function tempDir (t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-templates-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('render fills link, email and expires, with or without inner spaces', async (t) => {
  const template: MailTemplate = {
    subject: 'For {{email}}',
    text: '{{link}} {{ link }} {{email}} {{  expires  }}',
    html: '<a href="{{ link }}">{{email}}</a> {{expires}}'
  }
  t.same(render(template, values), {
    subject: 'For ada@example.com',
    text: 'https://app.example.com/reset?token=abc https://app.example.com/reset?token=abc ada@example.com 30 minutes',
    html: '<a href="https://app.example.com/reset?token=abc">ada@example.com</a> 30 minutes'
  })
})

t.test('an unknown placeholder is left as it is', async (t) => {
  const template: MailTemplate = { subject: '{{name}} {{email}}', text: '{{ token }} {{link}} {{}}', html: '<p>{{toString}} {{constructor}} {{expires}}</p>' }
  t.same(render(template, values), {
    subject: '{{name}} ada@example.com',
    text: '{{ token }} https://app.example.com/reset?token=abc {{}}',
    html: '<p>{{toString}} {{constructor}} 30 minutes</p>'
  }, 'names inherited by every object are unknown too')
})

t.test('values are escaped in the HTML part only', async (t) => {
  const tricky = { link: 'https://app.example.com/verify?token=a&next=/home', email: 'a<b>"@x.com', expires: "1 day's time" }
  const template: MailTemplate = { subject: 'Hi {{email}}', text: '{{email}} {{link}} {{expires}}', html: '<a href="{{link}}">{{email}}</a> {{expires}}' }
  const mail = render(template, tricky)
  t.equal(mail.subject, 'Hi a<b>"@x.com')
  t.equal(mail.text, 'a<b>"@x.com https://app.example.com/verify?token=a&next=/home 1 day\'s time')
  t.equal(mail.html, '<a href="https://app.example.com/verify?token=a&amp;next=/home">a&lt;b&gt;&quot;@x.com</a> 1 day&#39;s time')
})

t.test('the default templates name every value and leave no placeholder behind', async (t) => {
  for (const [name, template] of Object.entries(defaultTemplates)) {
    const mail = render(template, values)
    for (const part of ['subject', 'text', 'html'] as const) t.notMatch(mail[part], /\{\{/, `${name} ${part}`)
    t.match(mail.text, values.email, `${name} text has the address`)
    t.match(mail.html, /^<!doctype html>/, `${name} html is a page`)
    if (name === 'email-change-notice') {
      // A notice to the old address: what is changing, and no link to follow.
      t.match(mail.text, values.new_email, `${name} text has the new address`)
      t.notMatch(mail.html, 'href=', `${name} html has no link`)
      continue
    }
    t.match(mail.text, values.link, `${name} text has the link`)
    t.match(mail.text, values.expires, `${name} text has the expiry`)
    t.match(mail.html, `href="${values.link}"`, `${name} html links to it`)
  }
})

t.test('readTemplatesDir reads the parts present and withOverrides keeps the defaults of the others', async (t) => {
  const dir = tempDir(t)
  writeFileSync(join(dir, 'reset-password.subject.txt'), '  \n New password for {{email}} \n\n')
  writeFileSync(join(dir, 'reset-password.html'), '<p>Reset: <a href="{{link}}">here</a></p>\n')
  writeFileSync(join(dir, 'verify-email.txt'), 'Confirm {{email}}: {{link}}\n')
  writeFileSync(join(dir, 'unrelated.txt'), 'not a template')

  const overrides = readTemplatesDir(dir)
  t.same(overrides, {
    'reset-password': { subject: 'New password for {{email}}', html: '<p>Reset: <a href="{{link}}">here</a></p>\n' },
    'verify-email': { text: 'Confirm {{email}}: {{link}}\n' },
    'confirm-email': {},
    'email-change-notice': {}
  }, 'the subject is trimmed, the other parts are kept as written')

  const templates = withOverrides(overrides)
  t.same(templates['reset-password'], {
    subject: 'New password for {{email}}',
    text: defaultTemplates['reset-password'].text,
    html: '<p>Reset: <a href="{{link}}">here</a></p>\n'
  })
  t.same(templates['verify-email'], { ...defaultTemplates['verify-email'], text: 'Confirm {{email}}: {{link}}\n' })
  t.equal(render(templates['reset-password'], values).subject, 'New password for ada@example.com')
})

t.test('an empty folder changes nothing', async (t) => {
  const overrides = readTemplatesDir(tempDir(t))
  t.same(overrides, { 'reset-password': {}, 'verify-email': {}, 'confirm-email': {}, 'email-change-notice': {} })
  t.same(withOverrides(overrides), defaultTemplates)
  t.same(withOverrides(), defaultTemplates, 'no overrides at all')
})

t.test('a template file that exists but cannot be read is an error', async (t) => {
  const dir = tempDir(t)
  mkdirSync(join(dir, 'reset-password.html'))
  t.throws(() => readTemplatesDir(dir), { code: 'EISDIR' })
})

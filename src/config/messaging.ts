import { absoluteUrl, formatted, section, text } from './schema.js';

/** The channels messages leave by: email over SMTP, SMS through a webhook. */
export const messaging = section({
  variables: {
    SMTP_URL: formatted('smtp-url', 'must be an absolute URL using smtp: or smtps:', {
      description: 'email channel (`smtp://` or `smtps://`)',
    }),
    MAIL_FROM: text('Identity <no-reply@localhost>', { description: 'sender of every email' }),
    SMS_WEBHOOK_URL: formatted('http-url', 'must be an absolute URL using http: or https:', {
      description: 'SMS gateway: the service POSTs `{ "to", "text" }`; any 2xx is delivered',
    }),
  },
  formats: { 'smtp-url': (v) => absoluteUrl(v, ['smtp:', 'smtps:']) },
  map: (e) => ({ smtpUrl: e.SMTP_URL, mailFrom: e.MAIL_FROM, smsWebhookUrl: e.SMS_WEBHOOK_URL }),
});

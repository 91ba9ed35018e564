import { absoluteUrl, formatted, oneOf, section, text } from './schema.js';

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
    // The languages of src/shared/locales.ts (the hosted pages'); src/config imports nothing outside it.
    DEFAULT_LOCALE: oneOf<'en' | 'fr'>('en', ['en', 'fr'], {
      description:
        "the language (`en` or `fr`) of a new identity's messages when its sign-up said none and its `Accept-Language` names none the service speaks; also the language of a message to an address with no identity yet in that case",
    }),
  },
  formats: { 'smtp-url': (v) => absoluteUrl(v, ['smtp:', 'smtps:']) },
  map: (e) => ({
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    smsWebhookUrl: e.SMS_WEBHOOK_URL,
    /** The language of messages when neither the identity nor the request says one (DEFAULT_LOCALE). */
    defaultLocale: e.DEFAULT_LOCALE,
  }),
});

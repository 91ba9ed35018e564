-- The identity's preferred language (issue 46, item 2): every email and SMS the service sends it is
-- in this language. One of the hosted pages' languages (ui/i18n.ts LOCALES); set at sign-up from the
-- pages' language (or the request's Accept-Language, else DEFAULT_LOCALE) and updated by
-- PATCH /account when the person's pages speak another. Existing identities keep English, the only
-- language they were ever written to.
ALTER TABLE identities ADD COLUMN locale text NOT NULL DEFAULT 'en' CHECK (locale IN ('en', 'fr'));

/*
 * The translation tables of zxcvbn's language packages, imported by their own file
 * (ui/messages/strength-zxcvbn.ts): the packages' index also builds their dictionaries (an object
 * spread esbuild cannot drop), which the page's advice does not need. Typed as the index's export.
 */
declare module '@zxcvbn-ts/language-en/dist/translations.mjs' {
  const translations: typeof import('@zxcvbn-ts/language-en').translations;
  export default translations;
}
declare module '@zxcvbn-ts/language-fr/dist/translations.mjs' {
  const translations: typeof import('@zxcvbn-ts/language-fr').translations;
  export default translations;
}

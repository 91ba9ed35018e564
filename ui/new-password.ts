import { type Field, field, passwordToggle } from './dom.js';
import { t } from './messages/forms.js';
import { strengthMeter } from './strength.js';

/**
 * A password to be set: the service's bounds (12 to 200 characters) stated once, for every form,
 * and the strength meter under it, judged by the service's own rule (ui/strength.ts).
 * `userInputs` gives the person's identifiers when the form has no identifier field.
 */
export function newPasswordField(o: {
  label: string;
  name: string;
  hint?: string;
  userInputs?: () => readonly string[];
}): Field {
  const f = field({
    label: o.label,
    name: o.name,
    type: 'password',
    autocomplete: 'new-password',
    minlength: 12,
    maxlength: 200,
    hint: o.hint ? `${t('passwordBounds')} ${o.hint}` : t('passwordBounds'),
  });
  passwordToggle(f.input);
  const meter = strengthMeter(f.input, o.userInputs);
  // Under the input and its toggle, before the field's error.
  (f.input.parentElement as HTMLElement).after(meter.el);
  const describe = () => {
    const ids = (f.input.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean);
    if (!ids.includes(meter.textId))
      f.input.setAttribute('aria-describedby', [...ids, meter.textId].join(' '));
  };
  describe();
  return {
    ...f,
    setError(message) {
      f.setError(message);
      describe();
    },
  };
}

// Text-side hostile cases (escaping, secrets, answers that lie) live here.

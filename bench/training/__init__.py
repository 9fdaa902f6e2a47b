"""Training strategies on reference models: run them fairly, measure them, explain them."""

from .fakebackend import fake, register_fake  # noqa: F401  (fixtures)

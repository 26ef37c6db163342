"""Shared pytest options."""


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true",
                     help="rewrite tests/golden/*.scamp5 from the compiler, then check them")

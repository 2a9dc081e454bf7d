"""The bundle's entry script (``packaging/fredica.spec``): everything is in
:mod:`fredica_app.entry`, which tells the app, the endpoints server and a job child apart."""

import sys

from fredica_app.entry import main

if __name__ == "__main__":
    sys.exit(main())

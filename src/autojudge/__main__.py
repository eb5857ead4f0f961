from autojudge.cli.app import main

if __name__ == "__main__":  # vLLM spawns processes that re-import the main module
    main()

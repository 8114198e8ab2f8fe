"""The full zoo (marker `zoo`) runs only when asked for (`make zoo`, or `-m zoo`); its cheap
subset runs with the slow tests."""


def pytest_collection_modifyitems(config, items):
    if "zoo" in (config.option.markexpr or ""):
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("zoo") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep

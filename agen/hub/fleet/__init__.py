"""The fleet as the Hub sees it: content-addressed definitions, Nests and their instances, assignments."""
